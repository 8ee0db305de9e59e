package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/waiter"
)

// A burst of consumers on a healthy database is load, not an outage (docs/api/operations.md
// §9.7): 200 concurrent single-message pops on 200 partitions, through a pool of 4 connections
// with a DB_CONNECTION_TIMEOUT of 250 ms that most of them wait longer than, get their 200
// messages, and then their 200 concurrent acks all succeed. No request is answered
// unavailable and no outage is logged.
//
// 250 ms, not less: the probe must open a connection and answer within DB_CONNECTION_TIMEOUT,
// and with both cores busy (the suite under load) a new backend took more than 50 ms, which
// is an outage by definition and failed the test's first push.
func TestBurstOfPopsAndAcksIsLoadNotAnOutage(t *testing.T) {
	ctx := context.Background()
	var log testkit.LogBuffer
	logger := log.Logger()
	st, err := store.Open(ctx, store.Options{DSN: testDSN, MaxConns: 4, ConnectTimeout: 250 * time.Millisecond,
		RequestTimeout: time.Minute, StatementTimeout: time.Minute, Log: logger})
	if err != nil {
		t.Fatal(err)
	}
	hub := waiter.NewHub()
	b := New(st, hub, Config{PushCalls: 4, WithoutListener: true}, logger)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); b.Stop(); st.Close() })

	const n = 200
	q := queueName(t)
	items := make([]mq.PushItem, n)
	for i := range items {
		items[i] = item(q, fmt.Sprintf("p%03d", i), fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	x := &tb{t: t, st: st, b: b}
	x.push(items...)

	popped := make([]mq.PopResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			popped[i], errs[i] = b.Pop(store.Request(ctx), mq.PopRequest{Queue: q, Partition: fmt.Sprintf("p%03d", i), Batch: 1})
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("pop p%03d: %v", i, errs[i])
		case len(popped[i].Messages) != 1:
			t.Errorf("pop p%03d: %d messages, want 1", i, len(popped[i].Messages))
		case seen[popped[i].Messages[0].TransactionID]:
			t.Errorf("pop p%03d: %s delivered twice", i, popped[i].Messages[0].TransactionID)
		default:
			seen[popped[i].Messages[0].TransactionID] = true
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	acked := make([]mq.AckResult, n)
	for i := range n {
		m := popped[i].Messages[0]
		wg.Go(func() {
			var res []mq.AckResult
			res, errs[i] = b.Ack(store.Request(ctx), []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
				LeaseID: popped[i].LeaseID, Group: mq.QueueMode, Status: mq.AckCompleted}})
			if len(res) == 1 {
				acked[i] = res[0]
			}
		})
	}
	wg.Wait()
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("ack p%03d: %v", i, errs[i])
		case !acked[i].Success:
			t.Errorf("ack p%03d: %+v", i, acked[i])
		}
	}
	if text := log.String(); strings.Contains(text, "database unavailable") {
		t.Errorf("an outage was logged for a burst on a healthy database:\n%s", text)
	}
}
