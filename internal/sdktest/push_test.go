package sdktest

import (
	"encoding/json"
	"errors"
	"testing"

	queen "github.com/queen-go/queen/client"
)

func TestPushResultsAreTyped(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c, queen.MaxSize(3)).Partition("customer-42")
	raw, err := queen.JSON(`{"raw":true}`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Push(ctx,
		map[string]int{"n": 1},                           // minted key
		queen.Item{Payload: "two", TransactionID: "k-2"}, // chosen key
		&queen.Item{Payload: nil, TransactionID: "k-2"},  // duplicate inside the request
		raw,
		"four", // over maxSize 3
	)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	want := []queen.PushStatus{queen.PushQueued, queen.PushQueued, queen.PushDuplicate, queen.PushQueued, queen.PushFailed}
	for i, r := range res {
		if r.Index != i || r.Status != want[i] || r.Queue != q.Name() {
			t.Fatalf("result %d = %+v, want status %s", i, r, want[i])
		}
	}
	if res[0].TransactionID == "" || res[0].MessageID == "" || res[0].PartitionID == "" {
		t.Fatalf("queued result lacks ids: %+v", res[0])
	}
	if res[1].TransactionID != "k-2" || res[2].MessageID != res[1].MessageID {
		t.Fatalf("duplicate should name the stored message: %+v / %+v", res[1], res[2])
	}
	if res[4].Error != "queue full" {
		t.Fatalf("failed item: %+v", res[4])
	}
	var pe *queen.PushError
	if err := res.Err(); !errors.As(err, &pe) || len(pe.Failed) != 1 || pe.Failed[0].Index != 4 {
		t.Fatalf("Err() = %v", err)
	}

	b, err := q.Pop(ctx, queen.PopOptions{Batch: 10, Wait: wait})
	if err != nil || len(b.Messages) != 3 {
		t.Fatalf("pop: %v %+v", err, b)
	}
	if b.Messages[0].TransactionID != res[0].TransactionID || string(b.Messages[2].Data) != `{"raw":true}` ||
		b.Messages[1].Partition != "customer-42" {
		t.Fatalf("stored: %+v", b.Messages)
	}
	var s string
	if err := b.Messages[1].Decode(&s); err != nil || s != "two" {
		t.Fatalf("Decode: %q %v", s, err)
	}
}

func TestPushDuplicateAcrossRequests(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t))
	first := mustPush(t, q, queen.Item{Payload: 1, TransactionID: "order-1"})
	again, err := q.Push(testCtx(t), queen.Item{Payload: 1, TransactionID: "order-1"})
	if err != nil || again[0].Status != queen.PushDuplicate || again[0].MessageID != first[0].MessageID {
		t.Fatalf("second push: %v %+v", err, again)
	}
	if again.Err() != nil {
		t.Fatal("a duplicate is not a failure")
	}
}

func TestPushEdgeCases(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	if res, err := c.Queue(queueName(t)).Push(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty push: %v %v", res, err)
	}
	if _, err := c.Queue("").Push(ctx, 1); err == nil {
		t.Fatal("empty queue name accepted")
	}
	if _, err := c.Queue("q").Push(ctx, func() {}); err == nil {
		t.Fatal("unencodable payload accepted")
	}
	if _, err := queen.JSON("{nope"); err == nil {
		t.Fatal("JSON accepted invalid text")
	}
	var he *queen.HTTPError
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'k'
	}
	_, err := c.Queue(queueName(t)).Push(ctx, queen.Item{Payload: 1, TransactionID: string(long)})
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Message != "transactionId exceeds 255 characters" {
		t.Fatalf("err = %v", err)
	}
	// A nil *Item is a payload like any other value: JSON null.
	var nilItem *queen.Item
	res, err := c.Queue(queueName(t)).Push(ctx, nilItem)
	if err != nil || res[0].Status != queen.PushQueued {
		t.Fatalf("nil *Item: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res[0]); len(b) == 0 {
		t.Fatal("PushResult does not marshal")
	}
}
