-- queen-go schema: what `queen import-queen` took from a Queen database (docs/deploy.md, "Coming
-- from Queen"). One row per imported queue, written in the transaction that wrote the queue, its
-- messages and its groups' positions, and one for the stream queries: a queue of the same name
-- without a row here was not made by the import, and the import refuses to touch it; a queue
-- with a row is done, and a later run skips it.
CREATE TABLE queen_import (
    kind        text NOT NULL CHECK (kind IN ('queue', 'streams')),
    name        text NOT NULL,           -- the queue's name; '' for the stream queries
    source      text NOT NULL,           -- the source database and schema, for the operator
    counts      json NOT NULL,           -- rows written per kind
    imported_at timestamptz NOT NULL,
    PRIMARY KEY (kind, name)
);
