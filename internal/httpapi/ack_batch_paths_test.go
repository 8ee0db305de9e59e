package httpapi_test

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Batch acks of one pair under one lease, all completed, are decided set-based
// (qg_ack_batch_fast); every other batch is evaluated item by item. These cases sit on both
// sides of that line and must answer exactly as the item-by-item rules say (docs/api/concepts.md §8).
func TestAckBatchPaths(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("Default", "a1", "a2", "a3", "a4")
	p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")

	// Part of the batch, a key repeated: every item succeeds, the lease stays.
	res := b.semAckBatch(semAckOf(p, 1, "completed"), semAckOf(p, 0, "completed"), semAckOf(p, 0, "completed"))
	for i, r := range res {
		if !r.Success || r.LeaseReleased || r.AlreadyCommitted || r.Index != i {
			t.Fatalf("partial batch item %d: %+v", i, r)
		}
	}
	st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
	if st.LeaseID == nil || st.BatchEnd == nil || st.Cursor != *st.BatchEnd-1 {
		t.Fatalf("after the partial ack: %+v", st)
	}

	// An already-committed key with the rest: handed to the item-by-item rules.
	res = b.semAckBatch(semAckOf(p, 0, "completed"), semAckOf(p, 2, "completed"))
	if !res[0].Success || !res[0].AlreadyCommitted || !res[1].Success || res[1].AlreadyCommitted || !res[1].LeaseReleased {
		t.Fatalf("mixed batch: %+v", res)
	}

	// A key beyond the leased batch fails alone; the one inside completes the batch.
	q := b.semMustPop(b.semQ("batch=1"), "a4")
	b.semPushKeys("Default", "a5")
	beyond := obj{"transactionId": "a5", "partitionId": q.PartitionID, "leaseId": q.LeaseID, "status": "completed"}
	res = b.semAckBatch(beyond, semAckOf(q, 0, "completed"))
	if res[0].Success || semStr(res[0].Error) != "Message is beyond the leased batch" || !res[1].Success || !res[1].LeaseReleased {
		t.Fatalf("batch with a key beyond: %+v", res)
	}

	// The whole batch under a lease that is not the pair's: rejected, nothing moves.
	r := b.semMustPop(b.semQ("batch=1"), "a5")
	stale := semAckOf(r, 0, "completed")
	stale["leaseId"] = p.LeaseID
	res = b.semAckBatch(stale)
	if res[0].Success || semStr(res[0].Error) != "Invalid or expired lease" {
		t.Fatalf("stale lease: %+v", res)
	}
	if st := semState(t, b.queue, "Default", "__QUEUE_MODE__"); st.LeaseID == nil || *st.LeaseID != r.LeaseID {
		t.Fatalf("a rejected batch changed the lease: %+v", st)
	}
	res = b.semAckBatch(semAckOf(r, 0, "completed"))
	if !res[0].Success || !res[0].LeaseReleased {
		t.Fatalf("final ack: %+v", res)
	}
	// The ack that consumed the partition's last message took the pair out of the work index
	// (no pop has to walk into it first).
	var listed int
	if err := stateDB(t).QueryRow(context.Background(), `SELECT count(*) FROM partition_work w
		JOIN queues q ON q.id = w.queue_id WHERE q.name = $1`, b.queue).Scan(&listed); err != nil {
		t.Fatal(err)
	}
	if listed != 0 {
		t.Fatalf("%d pairs still listed after the last ack", listed)
	}
	b.semNoPop(b.semQ("batch=10"))
}
