-- Job leadership by lease rows (migration 0018): take, renew, give back. The database clock
-- decides expiry (clock_timestamp: a lease is real time, whatever clock the tests move).

-- Takes p_job's lease for p_holder for p_ttl unless another holder's lease is still running;
-- true when p_holder now holds it.
CREATE OR REPLACE FUNCTION qg_job_lease_take(p_job text, p_holder text, p_ttl interval)
RETURNS boolean LANGUAGE sql AS $$
    WITH taken AS (
        INSERT INTO job_leases AS l (job, holder, expires_at)
        VALUES (p_job, p_holder, clock_timestamp() + p_ttl)
        ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
            WHERE l.expires_at < clock_timestamp() OR l.holder = excluded.holder
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM taken);
$$;

-- Extends p_holder's lease on p_job by p_ttl from now; false when p_holder no longer holds it
-- (it expired and another holder took it). The row stays locked until the caller's
-- transaction ends, so no other holder takes it meanwhile.
CREATE OR REPLACE FUNCTION qg_job_lease_renew(p_job text, p_holder text, p_ttl interval)
RETURNS boolean LANGUAGE sql AS $$
    WITH renewed AS (
        UPDATE job_leases l SET expires_at = clock_timestamp() + p_ttl
        WHERE l.job = p_job AND l.holder = p_holder
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM renewed);
$$;

-- Gives p_holder's lease on p_job back; false when it held none.
CREATE OR REPLACE FUNCTION qg_job_lease_release(p_job text, p_holder text)
RETURNS boolean LANGUAGE sql AS $$
    WITH freed AS (
        DELETE FROM job_leases l WHERE l.job = p_job AND l.holder = p_holder RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM freed);
$$;
