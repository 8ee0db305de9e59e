package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// An ack that arrives after its lease expired, while another member re-popped the batch, is
// rejected with "Invalid or expired lease": it neither moves the cursor nor releases the new
// holder's lease, whose own acks then succeed.
func TestLateAckAfterLeaseExpiry(t *testing.T) {
	b := ccSetup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 1})
	b.push("", obj{"payload": 1, "transactionId": "k1"}, obj{"payload": 2, "transactionId": "k2"},
		obj{"payload": 3, "transactionId": "k3"})
	popPath := "/api/v1/pop/queue/" + b.queue + "?batch=3&consumerGroup=g"

	first, ok := b.pop(popPath)
	if !ok || fmt.Sprint(ccKeys(first)) != "[k1 k2 k3]" {
		t.Fatalf("first pop %+v", first)
	}
	if _, ok := b.pop(popPath); ok {
		t.Fatal("pair delivered again while its lease is live")
	}
	b.srv.Clock.Advance(2 * time.Second) // the 1 s lease expires

	second, ok := b.pop(popPath)
	if !ok || fmt.Sprint(ccKeys(second)) != "[k1 k2 k3]" || second.LeaseID == first.LeaseID || second.Messages[0].RetryCount != 0 {
		t.Fatalf("re-pop after expiry %+v (first lease %s)", second, first.LeaseID)
	}
	pid := first.PartitionID
	ackOf := func(key, lease string) obj {
		return obj{"transactionId": key, "partitionId": pid, "leaseId": lease, "consumerGroup": "g"}
	}
	const invalid = "Invalid or expired lease"

	// The late ack, alone and as a batch: rejected, nothing released.
	if a := b.ack(ackOf("k3", first.LeaseID)); a.Success || a.Error == nil || *a.Error != invalid || a.LeaseReleased || a.AlreadyCommitted {
		t.Fatalf("late ack %+v", a)
	}
	code, body := b.do("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g", "acknowledgments": []obj{
		ackOf("k1", first.LeaseID), ackOf("k2", first.LeaseID), ackOf("k3", first.LeaseID)}})
	if code != http.StatusOK {
		t.Fatalf("late ack batch: %d %s", code, body)
	}
	for _, a := range decode[[]acked](t, body) {
		if a.Success || a.Error == nil || *a.Error != invalid || a.LeaseReleased {
			t.Fatalf("late batch ack %s", body)
		}
	}
	// The new holder keeps its lease: nobody else gets the pair.
	if _, ok := b.pop(popPath); ok {
		t.Fatal("late ack released the new holder's lease")
	}
	// The cursor did not move: k1 is not already committed for the new holder.
	if a := b.ack(ackOf("k1", second.LeaseID)); !a.Success || a.AlreadyCommitted || a.LeaseReleased {
		t.Fatalf("new holder's ack of k1 %+v", a)
	}
	// Below the cursor a late ack is already committed (no lease check); above it, rejected.
	if a := b.ack(ackOf("k1", first.LeaseID)); !a.Success || !a.AlreadyCommitted || a.LeaseReleased {
		t.Fatalf("late ack below the cursor %+v", a)
	}
	if a := b.ack(ackOf("k2", first.LeaseID)); a.Success || a.Error == nil || *a.Error != invalid {
		t.Fatalf("late ack of k2 %+v", a)
	}
	code, body = b.do("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g", "acknowledgments": []obj{
		ackOf("k3", second.LeaseID), ackOf("k2", second.LeaseID)}})
	if code != http.StatusOK {
		t.Fatalf("new holder's ack batch: %d %s", code, body)
	}
	for _, a := range decode[[]acked](t, body) {
		if !a.Success || a.AlreadyCommitted || !a.LeaseReleased {
			t.Fatalf("new holder's ack batch %s", body)
		}
	}
	// Everything is consumed once: nothing comes back, not even after another lease time.
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed batch delivered again: %+v", p)
	}
	b.srv.Clock.Advance(2 * time.Second)
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed batch delivered after expiry: %+v", p)
	}
}

// The same race, run for real: after expiry the late ack and the re-pop go out at once. In
// either order the late ack is rejected and the re-pop gets the whole batch. The re-pop long
// polls: while the late ack holds the pair's row lock a claim skips the pair (claims never
// wait for a lock, docs/api/concepts.md §6.2), and the rejected ack changes nothing worth a wake-up,
// so the pop finds the batch at its next fallback check.
func TestLateAckRacingRepop(t *testing.T) {
	b := ccSetup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 1})
	api := newCCAPI(t, b.srv.URL)
	popPath := "/api/v1/pop/queue/" + b.queue + "?batch=2&consumerGroup=g"
	repopPath := popPath + "&wait=true&timeout=5000"
	for round := range 8 {
		k1, k2 := fmt.Sprintf("r%d-a", round), fmt.Sprintf("r%d-b", round)
		b.push("", obj{"payload": round, "transactionId": k1}, obj{"payload": round, "transactionId": k2})
		first, ok := b.pop(popPath)
		if !ok || fmt.Sprint(ccKeys(first)) != fmt.Sprintf("[%s %s]", k1, k2) {
			t.Fatalf("round %d: pop %+v", round, first)
		}
		b.srv.Clock.Advance(2 * time.Second)

		var wg sync.WaitGroup
		var late []acked
		var second popped
		var lateErr, popErr error
		var popOK bool
		wg.Add(2)
		go func() {
			defer wg.Done()
			late, lateErr = api.acks(context.Background(), "g", ccAcks([]ccDelivery{
				{key: k1, partition: first.PartitionID}, {key: k2, partition: first.PartitionID}}, first.LeaseID)...)
		}()
		go func() {
			defer wg.Done()
			second, popOK, popErr = api.pop(context.Background(), repopPath)
		}()
		wg.Wait()
		if lateErr != nil || popErr != nil {
			t.Fatalf("round %d: %v %v", round, lateErr, popErr)
		}
		for _, a := range late {
			if a.Success || a.Error == nil || *a.Error != "Invalid or expired lease" {
				t.Fatalf("round %d: late ack %+v", round, late)
			}
		}
		if !popOK || fmt.Sprint(ccKeys(second)) != fmt.Sprintf("[%s %s]", k1, k2) || second.LeaseID == first.LeaseID {
			t.Fatalf("round %d: re-pop %+v", round, second)
		}
		res, err := api.acks(context.Background(), "g", ccAcks([]ccDelivery{
			{key: k1, partition: second.PartitionID}, {key: k2, partition: second.PartitionID}}, second.LeaseID)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res {
			if !a.Success || a.AlreadyCommitted || !a.LeaseReleased {
				t.Fatalf("round %d: holder's ack %+v", round, res)
			}
		}
	}
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed messages delivered again: %+v", p)
	}
}
