package store

import (
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// PostgreSQL breaks a deadlock by rolling back one of its transactions, which then changed
// nothing: a transaction call it picks is run again, not answered as a QDB rollback. Here
// another session holds the input's consumer row and then asks for the output's partition,
// which the call, waiting on that consumer row, already holds. The other session waits longer
// before it looks for deadlocks (deadlock_timeout), so the call is the one rolled back.
func TestTransactionRetriesADeadlockVictim(t *testing.T) {
	b := setup(t)
	src := b.seed("in", "", "m1")
	outPID := b.pushKeys("o", "warm")[0].PartitionID
	inPID := src.Messages[0].PartitionID

	other := schemaConn(t, b.ctx)
	tx, err := other.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck // after Commit: a no-op
	var xid int64
	if err := tx.QueryRow(b.ctx, `SELECT set_config('deadlock_timeout', '60s', true), txid_current()`).Scan(new(string), &xid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM consumers WHERE partition_id = $1 FOR UPDATE`, inPID); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		res []mq.TxnResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := b.txn([]string{src.LeaseID}, txnAck(src, 0), row(b.queue, "o", "out-m1"))
		done <- answer{res, err}
	}()
	waitForWaiterOn(t, b, xid, "the transaction")
	// The cycle: this waits for the call, which waits for this session.
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM partitions WHERE id = $1 FOR NO KEY UPDATE`, outPID); err != nil {
		t.Fatalf("the other session was the deadlock's victim: %v", err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || len(a.res) != 2 {
		t.Fatalf("transaction: %v, %+v; want it run again and committed", a.err, a.res)
	}
	b.wantState("in", mq.QueueMode, 1, false)
	b.mustPop(PopRequest{Partition: "o", Batch: 10}, "warm", "out-m1")
}
