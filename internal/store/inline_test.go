package store

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// The data path calls no SQL function that PostgreSQL runs as a function call: PostgreSQL 15
// inlines an SQL function only when its body is a plain expression (or, in FROM, a stable
// query), and plans the body of any other again in each statement that calls it. One such
// function, the open segment's lookup, cost a tenth of a single-message push call's database
// time (bench/HISTORY.md, "Message segments and the single-message pushes"). PostgreSQL counts
// a function in pg_stat_user_functions (track_functions = all) only when it calls it, so an
// SQL function counted there once per push, pop, ack or transaction is one planned per call.
// Functions of the first call to a partition or group (its creation, its cursor) run once in
// all here, and the bound is the number of rounds.
func TestDataPathCallsNoSQLFunctionItPlansPerCall(t *testing.T) {
	const schema, rounds = "inline_calls", 12
	u, err := url.Parse(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	// pgx reads a '+' in the URL as itself, not a space
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "options=-c%20track_functions%3Dall"
	dropSchema(t, schema)
	s, err := Open(context.Background(), Options{DSN: u.String(), Schema: schema, MaxConns: 4,
		ConnectTimeout: 15 * time.Second, RequestTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Now().UTC().Truncate(time.Microsecond)}
	s.SetClock(clock.Now)
	b := &testBundle{t: t, ctx: context.Background(), s: s, clock: clock, queue: "plain"}
	kept := "kept" // a queue with retention: its pushes go to the open segment
	b.configure(kept, func(o *mq.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 3600 })
	b.rotateSegments()

	for i := range rounds {
		for _, queue := range []string{b.queue, kept} {
			b.pushKeysTo(queue, "p", fmt.Sprint("one-", i))
			b.pushKeysTo(queue, "p", fmt.Sprint("a-", i), fmt.Sprint("b-", i), fmt.Sprint("c-", i))
		}
		// queue mode, acked one by one; a group, acked as a batch
		p := b.mustPop(PopRequest{Queue: kept}, fmt.Sprint("one-", i))
		b.mustAck(ackOf(p, 0, mq.AckCompleted))
		g := b.mustPop(PopRequest{Queue: b.queue, Group: "g", Batch: 4},
			fmt.Sprint("one-", i), fmt.Sprint("a-", i), fmt.Sprint("b-", i), fmt.Sprint("c-", i))
		items := make([]mq.AckItem, len(g.Messages))
		for j := range g.Messages {
			items[j] = ackOf(g, j, mq.AckCompleted)
		}
		b.ack(items...)
		// a pipeline stage: the next message acked, the output pushed, in one transaction
		p = b.mustPop(PopRequest{Queue: kept}, fmt.Sprint("a-", i))
		b.txnCommit(nil, ackOf(p, 0, mq.AckCompleted), row("next", "p", fmt.Sprint("out-", i)))
		for _, k := range []string{"b-", "c-"} {
			p = b.mustPop(PopRequest{Queue: kept}, k+fmt.Sprint(i))
			b.mustAck(ackOf(p, 0, mq.AckCompleted))
		}
	}

	// Each pooled session reports what it counted once it is idle after
	// pg_stat_force_next_flush (then, before its next statement runs).
	for _, c := range s.pool.AcquireAllIdle(b.ctx) {
		for _, sql := range []string{"SELECT pg_stat_force_next_flush()", "SELECT 1"} {
			if _, err := c.Exec(b.ctx, sql); err != nil {
				c.Release()
				t.Fatal(err)
			}
		}
		c.Release()
	}
	rows, err := s.pool.Query(b.ctx, `SELECT f.funcname::text, f.calls FROM pg_stat_user_functions f
		JOIN pg_proc p ON p.oid = f.funcid JOIN pg_language l ON l.oid = p.prolang
		WHERE f.schemaname = $1 AND l.lanname = 'sql' AND f.calls >= $2 ORDER BY 1`, schema, rounds)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var calls int64
		if err := rows.Scan(&name, &calls); err != nil {
			t.Fatal(err)
		}
		t.Errorf("SQL function %s called %d times in %d rounds of pushes, pops, acks and transactions: planned per call; "+
			"make it inlinable or PL/pgSQL", name, calls, rounds)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The check sees calls at all: PL/pgSQL functions are counted the same way.
	var pushes int64
	if err := s.pool.QueryRow(b.ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
		WHERE schemaname = $1 AND funcname LIKE 'qg_push%'`, schema).Scan(&pushes); err != nil {
		t.Fatal(err)
	}
	if pushes < rounds {
		t.Fatalf("%d calls of the push functions counted; the sessions' counts did not arrive", pushes)
	}
}
