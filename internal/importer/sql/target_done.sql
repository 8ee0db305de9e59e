-- Records an imported item, in the transaction that imported it.
INSERT INTO queen_import (kind, name, source, counts, imported_at) VALUES ($1, $2, $3, $4, now());
