package broker

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/admin"
)

// A queue clear that cannot finish before its deadline (DB_STATEMENT_TIMEOUT since the call
// started) answers with the batches it committed and complete false; the batch in flight rolls
// back, and calling again continues (docs/api/admin-api.md §1.2). Here a writer holding the
// partition lock keeps the first batch from starting.
func TestClearQueueStopsAtItsDeadline(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	res := x.push(item(q, "p", "a", `{}`), item(q, "p", "b", `{}`), item(q, "p", "c", `{}`))
	a := admin.New(x.st, x.b, nil, nil)
	a.SetClearLimits(2, 300*time.Millisecond)
	ctx := context.Background()

	tx, err := rawDB(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM partitions WHERE id = $1 FOR NO KEY UPDATE`, res[0].PartitionID); err != nil {
		t.Fatal(err)
	}
	got, qf, pf, err := a.ClearQueue(ctx, q, "")
	if err != nil || !qf || !pf || got.Complete || got.MessagesDeleted != 0 {
		t.Fatalf("blocked clear: %+v %v %v %v, want complete false with nothing deleted", got, qf, pf, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, _, err = a.ClearQueue(ctx, q, "")
	if err != nil || !got.Complete || got.MessagesDeleted != 3 || got.PartitionsCleared != 1 {
		t.Fatalf("clear again: %+v %v", got, err)
	}
}
