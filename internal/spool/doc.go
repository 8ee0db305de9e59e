// Package spool is the file buffer (docs/api/operations.md §4.1, §4.2): the durable on-disk
// log of pushes kept while PostgreSQL is away, and the background drain that replays them.
//
// # Use
//
// Open takes the directory (FILE_BUFFER_DIR) exclusively, verifies it and returns a *Spool;
// Start runs its writer. Append makes a push's records durable before the push is answered;
// a Drainer, given the push path as a WriteFunc, replays them with Next and Commit. Stop the
// Drainer, then Close the Spool.
//
// # Durability
//
// Append returns nil only once its records are written and fsynced, together with the
// directory when the write started a new file: an acknowledged record survives a crash of
// the process or the machine. Concurrent Appends share one write and one fsync (group commit,
// as the broker's push coalescer shares database calls): one writer goroutine takes every
// Append waiting when it is free, writes them as one frame, fsyncs once and answers all. An
// idle spool writes an Append at once; a busy one carries many per fsync, so spooling many
// small concurrent pushes costs about one fsync per disk round trip, not one per push.
//
// Each Append is all-or-nothing. When a write or fsync fails (disk full, directory not
// writable), the file is truncated back to its last durable size, and that truncation is
// fsynced, before Append returns an error wrapping ErrWrite: nothing of it can be replayed.
// A failed group is retried Append by Append, so one that still fits is kept. The spool stays
// usable; while the truncation itself fails, writes fail too rather than write after junk.
//
// # Format
//
// The directory holds spool.lock (flock'ed while open), the spool files NNNNNNNNNNNNNNNN.spool
// (16 hex digits, numbered in order and never reused) and, per spool file being replayed, a
// checkpoint NNNNNNNNNNNNNNNN.ckpt. A spool file is an 8-byte header — "QSPOOL", a format
// version byte (1), a zero byte — followed by frames. A frame is one group commit:
//
//	uint32 LE  body length
//	uint32 LE  CRC32C (Castagnoli) of the length bytes and the body
//	body:      uvarint record count, then per record: uvarint length, record
//
// and a record is: varint SpooledAt (Unix ns), then queue, partition, message id, key and
// trace id (each uvarint length + bytes), a byte 0/1 for ProducerSub and, when 1, the sub, then
// the payload (uvarint length + bytes, the JSON text as is). A file holds EventsPerFile records
// (FILE_BUFFER_EVENTS_PER_FILE); an Append never spans files.
//
// Binary length-prefixed frames with a checksum, rather than JSON lines, because a torn write
// must be told apart from data: a JSON line cut short may still parse, and payloads would
// need escaping. The checksum covers the length too, so the zeros a crash can leave in a grown
// file never verify. The unit is the group commit, not the record, so that whatever a crash
// tears is one frame: an fsync not yet returned may have put any subset of a write's pages on
// disk, and with one frame per write no verified record can follow a torn one.
//
// # Torn writes and corruption
//
// Open verifies every frame. In the newest file, bad bytes after which no frame verifies are
// the torn last write of a crash, never acknowledged: they are truncated away (and logged).
// Bad bytes anywhere else — in an older file, or followed by a frame that verifies — were
// acknowledged once: Open stops with a *CorruptError naming the file and offset rather than
// skip them.
//
// # Order and replay
//
// Next returns the oldest records not yet committed, in append order across files; so within
// each (queue, partition) the order of the pushes is kept. Next does not move the replay
// position: a batch that fails to replay is returned again by the next Next, never skipped,
// reordered or dropped. Commit records the new position durably — the spool file's checkpoint
// (the count of its records replayed, 20 bytes with a CRC32C) is rewritten and fsynced — and
// deletes files fully replayed. The Drainer replays batch after batch while its Ready gate
// holds, retrying a failing batch with exponential back-off capped at MaxBackoff (5 s).
//
// # Duplicates
//
// Replay is at least once. A crash between writing a batch to the database and its Commit
// replays the batch again after restart; so does a checkpoint that fails its checksum, or a
// Commit that failed after the database write. That is harmless by contract: every record's
// message id and key (transactionId) were minted when it was spooled, so the database drops a
// replayed record whose key is already taken as the duplicate it is, and the WriteFunc reports
// it (counted in DrainStats.Duplicates). The spool never invents a record: only what Append
// acknowledged, or a write it was making when the process died, is ever replayed.
//
// # Sizing
//
// A record takes about its payload plus 100 bytes (two 36-character ids, the queue and
// partition names, a few length bytes and the timestamp), plus 8 bytes per group commit. A
// full file of the default 10,000 records of 1 KiB payloads is about 11 MiB. Payloads are
// plain text (encryption is applied on replay): protect the directory like the database.
package spool
