package store

import (
	"context"
	"fmt"
	"testing"
)

// A push's first item in a partition is compared with the partition's newest message, which
// the push reads from its head (partition_heads.last_message_at and last_message_id, migration
// 0025): an id below that message's, in the same millisecond, is dated a millisecond later, so
// (createdAt to the millisecond, id) keeps rising with position across calls (docs/design.md,
// "Message order within a partition"). The first call writes 200 descending ids, which dates
// its last message some 190 ms ahead of the clock: the next calls start in that message's
// millisecond whatever the machine's speed, so only the comparison with the head can order
// them. Both write paths: one item (qg_push_one) and several (qg_push_set).
func TestPushAfterTheNewestMessageIsDatedAfterIt(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "push_order_heads")
	ctx := context.Background()
	id := func(n int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012x", n) }
	push := func(ids ...int) {
		t.Helper()
		rows := make([]PushRow, len(ids))
		for i, n := range ids {
			rows[i] = PushRow{Queue: "order", Partition: "p", Key: id(n), ID: id(n), Payload: []byte(`{}`)}
		}
		if _, err := s.Push(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	var first []int
	for n := 1000; n > 800; n-- {
		first = append(first, n)
	}
	push(first...) // newest message: id 801, dated ahead of the clock
	push(500)      // one item, below it
	push(400, 300) // several, below the one before
	var bad []string
	rows, err := s.pool.Query(ctx, `SELECT position, created_at::text, id::text FROM (
		SELECT m.position, m.created_at, m.id,
		       lag(date_trunc('milliseconds', m.created_at)) OVER w AS prev_ms, lag(m.id) OVER w AS prev_id
		FROM messages m JOIN partitions p ON p.id = m.partition_id
		WHERE p.name = 'p' WINDOW w AS (ORDER BY m.position)) x
		WHERE (date_trunc('milliseconds', x.created_at), x.id) <= (x.prev_ms, x.prev_id)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pos int64
		var at, mid string
		if err := rows.Scan(&pos, &at, &mid); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, fmt.Sprintf("position %d (%s, %s)", pos, at, mid))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("(createdAt to the millisecond, id) does not rise at %v", bad)
	}
}
