-- queen-go schema, version 25: partition_heads also keeps the id of the newest stored message,
-- beside its createdAt (last_message_at). A push dates its items from the two (docs/design.md,
-- "Message order within a partition"): read with the head it already reads, instead of two
-- probes of messages per partition and call (bench/HISTORY.md, "Spread pushes: the call's
-- own statements").
ALTER TABLE partition_heads ADD COLUMN last_message_id uuid;
UPDATE partition_heads h SET last_message_id = (
    SELECT m.id FROM messages m WHERE m.partition_id = h.partition_id ORDER BY m.position DESC LIMIT 1)
WHERE h.last_position > 0;
