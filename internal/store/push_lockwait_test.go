package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// A push spread over partitions of which another transaction holds one (here an open push on
// pB, as a pipelined call or another instance would) waits for that transaction, taking the
// partitions one by one (qg_push_items' lock_not_available path), and then writes all its
// items in one transaction after the holder's: positions in pB follow the holder's message when
// it commits, and take its place when it rolls back; pA and pC, not held, are written too.
func TestPushWaitingOnAHeldPartitionWritesAfterTheHolder(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprint("commit=", commit), func(t *testing.T) {
			b := setup(t)
			pids := map[string]string{}
			for _, p := range []string{"pA", "pB", "pC"} {
				pids[p] = b.pushKeys(p, "warm-"+p)[0].PartitionID
			}
			tx, err := b.s.pool.Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(b.ctx) //nolint:errcheck // after Commit: a no-op
			var xid int64
			if _, err := tx.Exec(b.ctx, `SELECT count(*) FROM qg_push_items(ARRAY[$1]::uuid[], ARRAY['held'], ARRAY[$2]::uuid[],
				ARRAY['1'], ARRAY[false], ARRAY[NULL::uuid], ARRAY[NULL::text], NULL, false)`, pids["pB"], uuid.NewString()); err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRow(b.ctx, `SELECT txid_current()`).Scan(&xid); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				res []mq.PushResult
				err error
			}
			done := make(chan answer, 1)
			rows := []PushRow{row(b.queue, "pA", "a1"), row(b.queue, "pB", "b1"), row(b.queue, "pC", "c1"), row(b.queue, "pB", "b2")}
			go func() {
				res, err := b.s.Push(b.ctx, rows)
				done <- answer{res, err}
			}()
			waitForWaiterOn(t, b, xid, "the push")
			if commit {
				err = tx.Commit(b.ctx)
			} else {
				err = tx.Rollback(b.ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.err != nil || len(a.res) != len(rows) {
				t.Fatalf("push: %v, %d results", a.err, len(a.res))
			}
			for i, r := range a.res {
				if r.Status != mq.StatusQueued || r.PartitionID != pids[rows[i].Partition] {
					t.Fatalf("item %d: %+v", i, r)
				}
			}
			got := map[string]int64{}
			q, err := b.s.pool.Query(b.ctx, `SELECT transaction_id, position FROM messages WHERE partition_id = $1`, pids["pB"])
			if err != nil {
				t.Fatal(err)
			}
			for q.Next() {
				var k string
				var pos int64
				if err := q.Scan(&k, &pos); err != nil {
					t.Fatal(err)
				}
				got[k] = pos
			}
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{"warm-pB": 1, "held": 2, "b1": 3, "b2": 4}
			if !commit {
				want = map[string]int64{"warm-pB": 1, "b1": 2, "b2": 3}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pB holds %v, want %v", got, want)
			}
			var n int
			if err := b.s.pool.QueryRow(b.ctx, `SELECT count(*) FROM messages WHERE transaction_id IN ('a1', 'c1')`).Scan(&n); err != nil || n != 2 {
				t.Fatalf("pA and pC hold %d of their items (%v)", n, err)
			}
		})
	}
}

// waitForWaiterOn waits until some session waits for transaction xid (a row lock it holds);
// who names the waiter expected, for the message while there is none.
func waitForWaiterOn(t *testing.T, b *testBundle, xid int64, who string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Minute, 10*time.Millisecond, func() error {
		var n int
		if err := b.s.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'
			AND transactionid::text::bigint = $1 % 4294967296`, xid).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s does not wait yet", who)
		}
		return nil
	})
}
