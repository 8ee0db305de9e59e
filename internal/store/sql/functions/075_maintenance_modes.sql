-- The maintenance modes (docs/api/operations.md §4.4): set one flag and tell every instance.
-- The NOTIFY is sent inside the transaction (a rare writer, see docs/design.md "Long polling"),
-- so it goes out only if the change commits, and in commit order: the last notification an
-- instance hears is the state that stands. Its payload is a JSON object, which the listener
-- tells apart from the queue wake-ups (JSON arrays) on the same channel.
CREATE OR REPLACE FUNCTION qg_set_maintenance_mode(p_mode text, p_enabled boolean, p_by text, p_on text)
RETURNS TABLE (push boolean, pop boolean, version bigint, changed_at timestamptz, changed_by text, changed_on text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF p_mode NOT IN ('push', 'pop') THEN
        RAISE EXCEPTION 'unknown maintenance mode %', p_mode;
    END IF;
    RETURN QUERY
    UPDATE maintenance_modes m
       SET push = CASE WHEN p_mode = 'push' THEN p_enabled ELSE m.push END,
           pop  = CASE WHEN p_mode = 'pop' THEN p_enabled ELSE m.pop END,
           version = m.version + 1, changed_at = now(), changed_by = p_by, changed_on = p_on
     WHERE m.singleton
    RETURNING m.push, m.pop, m.version, m.changed_at, m.changed_by, m.changed_on;
    PERFORM pg_notify('qg_wake:' || current_schema(),
        json_build_object('maintenance', json_build_object('push', m.push, 'pop', m.pop, 'version', m.version))::text)
      FROM maintenance_modes m WHERE m.singleton;
END $$;
