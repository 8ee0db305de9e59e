package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// A pop walks the work index from a snapshot taken when it starts. A pair it saw drained
// (cursor at the partition's last message) may have had its cursor moved back since (here the
// group's cursors are deleted while the pop waits on another pair); the pop must not then take
// the pair out of the index, or its messages are never delivered again.
func TestReviewStaleDrainedPairKeepsWork(t *testing.T) {
	b := setup(t, testserver.Options{})
	group := "g-" + b.queue
	ctx := context.Background()
	popQ := "/api/v1/pop/queue/" + url.PathEscape(b.queue) + "?consumerGroup=" + url.QueryEscape(group)

	// Register the group on B, then create A (never popped: no cursor) and leave B drained,
	// listed after A.
	popB := "/api/v1/pop/queue/" + url.PathEscape(b.queue) + "/partition/b?consumerGroup=" + url.QueryEscape(group)
	b.push("b", obj{"transactionId": "b1", "payload": 1})
	p, ok := b.pop(popB)
	if !ok {
		t.Fatal("no message on b")
	}
	b.ack(obj{"transactionId": "b1", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})
	if _, ok := b.pop(popQ); ok {
		t.Fatal("b is drained")
	}
	b.push("a", obj{"transactionId": "a1", "payload": 1})
	time.Sleep(20 * time.Millisecond) // real elapsed time: b2's id dates a later millisecond than a1's
	b.push("b", obj{"transactionId": "b2", "payload": 1})
	if p, ok = b.pop(popB); !ok {
		t.Fatal("no message on b")
	}
	b.ack(obj{"transactionId": "b2", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})

	// Hold an uncommitted cursor for the group on A: the next pop waits there.
	tx, err := stateDB(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var xid string
	if err := tx.QueryRow(ctx, `INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor, lease_id, lease_expires_at)
		SELECT p.id, $2, q.id, 0, gen_random_uuid(), 'infinity' FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = 'a' RETURNING pg_current_xact_id()::text`, b.queue, group).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		resp, _, err := roundTrip(ctx, http.DefaultClient, "GET", b.srv.URL+popQ, nil, nil)
		if err != nil {
			done <- -1
			return
		}
		done <- resp.StatusCode
	}()
	testkit.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		var n int
		if err := stateDB(t).QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted
			AND locktype = 'transactionid' AND transactionid::text = $1`, xid).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errors.New("the pop does not wait on A")
		}
		return nil
	})
	// Meanwhile the group's cursors go: still registered, it restarts from the first message.
	if code, body := b.do("DELETE", "/api/v1/consumer-groups/"+url.PathEscape(group)+"/queues/"+url.PathEscape(b.queue)+"?deleteMetadata=false", nil); code != http.StatusOK {
		t.Fatalf("delete group: %d %s", code, body)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("waiting pop: %d", code)
	}

	var got []string
	for range 5 {
		p, ok := b.pop(popQ)
		if !ok {
			break
		}
		for _, m := range p.Messages {
			got = append(got, m.TransactionID)
			b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("after the group's cursors were deleted it got %v, want b1 b2 again", got)
	}
}

// A batch released by a retry ack is deliverable again at once (docs/api/concepts.md §6.1, §7): its
// first message is visible, whatever the delay of the messages after the batch.
func TestReviewRetryRedeliveredUnderDelayedProcessing(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"delayedProcessing": 10}})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(5 * time.Second)
	b.semPushKeys("pA", "a2")
	b.srv.Clock.Advance(5 * time.Second) // a1 visible, a2 not yet
	p := b.semMustPop(b.semQ("batch=10"), "a1")
	b.semMustAck(semAckOf(p, 0, "retry"))
	b.semMustPop(b.semQ("batch=10"), "a1")
}
