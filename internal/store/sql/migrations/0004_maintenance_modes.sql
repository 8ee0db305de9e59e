-- queen-go schema, version 4: the maintenance modes (docs/api/operations.md §4.4,
-- docs/api/admin-api.md §9). One row holds both flags, so every instance reads the same state
-- and a change is one row update whose NOTIFY goes out on commit.
CREATE TABLE maintenance_modes (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    push       boolean NOT NULL DEFAULT false,   -- push maintenance: pushes are not written to the database
    pop        boolean NOT NULL DEFAULT false,   -- pop maintenance: every pop answers 204
    -- Bumped by every change. Instances apply a state only when its version is not older than
    -- the one they hold, so a fallback read that raced a notification cannot undo it.
    version    bigint NOT NULL DEFAULT 0,
    changed_at timestamptz,                      -- NULL until the first change
    changed_by text,                             -- the token's sub; NULL with authentication off
    changed_on text                              -- WORKER_ID of the instance that took the request
);
INSERT INTO maintenance_modes (singleton) VALUES (true);
