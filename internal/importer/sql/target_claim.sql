-- Taken first in the transaction that imports one item: serialises concurrent runs on the
-- item (the lock is held to commit), then answers what is there now: 'done' (an earlier run
-- imported it), 'taken' (a queue of that name that the import did not make) or 'free'.
SELECT pg_advisory_xact_lock(hashtext('queen_import'), hashtext($1 || ':' || $2)),
       CASE WHEN EXISTS (SELECT 1 FROM queen_import i WHERE i.kind = $1 AND i.name = $2) THEN 'done'
            WHEN $1 = 'queue' AND EXISTS (SELECT 1 FROM queues q WHERE q.name = $2) THEN 'taken'
            ELSE 'free' END;
