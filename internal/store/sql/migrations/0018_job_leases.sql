-- Leadership of a background job by a lease row, for brokers behind a transaction pooler without
-- a direct session (DATABASE_POOLER=transaction, no DATABASE_SESSION_URL), where an advisory
-- lock held across transactions would stay behind on a server session that other clients use
-- (docs/deploy.md, "Behind a connection pooler"). A job leads while its row names it and has
-- not expired; every statement of the job renews the row in its own transaction first
-- (qg_job_lease_renew), so a holder that lost the row stops at its next statement, and one whose
-- statement is running keeps the row locked until it commits.
CREATE TABLE job_leases (
    job        text PRIMARY KEY,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);
