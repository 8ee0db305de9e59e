package sdktest

import (
	"errors"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

func TestPopBatchAndAckOutcomes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q, numbered(4)...)
	b, err := q.Pop(ctx, queen.PopOptions{Batch: 3, Wait: wait})
	if err != nil || len(b.Messages) != 3 || b.LeaseID == "" || b.PartitionsClaimed != 1 ||
		b.ConsumerGroup != "__QUEUE_MODE__" {
		t.Fatalf("pop: %v %+v", err, b)
	}
	m := b.Messages
	if m[0].LeaseID != b.LeaseID || m[0].CreatedAt.IsZero() || m[0].RetryCount != 0 || m[0].Partition != "Default" {
		t.Fatalf("message: %+v", m[0])
	}

	// Beyond the batch: the 4th message was not delivered.
	other, err := q.Pop(ctx, queen.PopOptions{})
	if err != nil || !other.Empty() {
		t.Fatalf("partition should be leased: %v %+v", err, other)
	}
	res, err := c.Ack(ctx, m[0].Ack(queen.AckCompleted))
	if err != nil || res.Outcome != queen.AckApplied || !res.OK() || res.LeaseReleased || res.Queue != q.Name() {
		t.Fatalf("ack 0: %v %+v", err, res)
	}
	res, _ = c.Ack(ctx, m[0].Ack(queen.AckCompleted))
	if res.Outcome != queen.AckAlreadyCommitted || !res.OK() {
		t.Fatalf("ack 0 again: %+v", res)
	}
	wrongLease := m[1].Ack(queen.AckCompleted)
	wrongLease.LeaseID = "0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90"
	res, _ = c.Ack(ctx, wrongLease)
	if res.Outcome != queen.AckLeaseInvalid || res.OK() {
		t.Fatalf("wrong lease: %+v", res)
	}
	missing := m[1].Ack(queen.AckCompleted)
	missing.TransactionID = "nope"
	res, _ = c.Ack(ctx, missing)
	if res.Outcome != queen.AckMessageNotFound {
		t.Fatalf("unknown message: %+v", res)
	}

	// Batch ack: completes 1 and 2; the batch ends and the lease is released.
	all, err := c.AckBatch(ctx, m[1].Ack(queen.AckCompleted), m[2].Ack(queen.AckCompleted).WithError("ignored"))
	if err != nil || len(all) != 2 || all[1].Outcome != queen.AckApplied || !all[1].LeaseReleased || all[1].Index != 1 {
		t.Fatalf("ack batch: %v %+v", err, all)
	}
	// Lease-less ack of a message outside any batch.
	b4, _ := q.Pop(ctx, queen.PopOptions{Wait: wait})
	if len(b4.Messages) != 1 || payloadOf(t, b4.Messages[0]) != 3 {
		t.Fatalf("4th: %+v", b4)
	}
	res, _ = c.Ack(ctx, m[1].Ack(queen.AckCompleted)) // consumed already
	if res.Outcome != queen.AckAlreadyCommitted {
		t.Fatalf("%+v", res)
	}
	if empty, _ := c.AckBatch(ctx); len(empty) != 0 {
		t.Fatal("empty ack batch")
	}
}

func TestAckFailedRetryAndDLQ(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c, queen.RetryLimit(1), queen.RetryDelay(0))
	mustPush(t, q, map[string]int{"n": 7})
	pop := func() *queen.Message {
		t.Helper()
		b, err := q.Pop(ctx, queen.PopOptions{Wait: 5 * time.Second})
		if err != nil || len(b.Messages) != 1 {
			t.Fatalf("pop: %v %+v", err, b)
		}
		return b.Messages[0]
	}
	m := pop()
	if res, _ := c.Ack(ctx, m.Ack(queen.AckRetry)); res.Outcome != queen.AckApplied || !res.LeaseReleased {
		t.Fatalf("retry: %+v", res)
	}
	m = pop()
	if m.RetryCount != 0 {
		t.Fatalf("a retry ack counted a failure: %+v", m)
	}
	if res, _ := c.Ack(ctx, m.Ack(queen.AckFailed).WithError("boom")); !res.LeaseReleased || res.DLQ {
		t.Fatalf("failed #1: %+v", res)
	}
	m = pop()
	if m.RetryCount != 1 {
		t.Fatalf("retryCount = %d", m.RetryCount)
	}
	if res, _ := c.Ack(ctx, m.Ack(queen.AckFailed).WithError("poison")); !res.DLQ {
		t.Fatalf("failed with retries exhausted should dead-letter: %+v", res)
	}
	page, err := q.DLQ(ctx, queen.DLQQuery{})
	skipIfUnsupported(t, err, "GET /api/v1/dlq")
	if err != nil || page.Total != 1 || len(page.Messages) != 1 {
		t.Fatalf("DLQ: %v %+v", err, page)
	}
	e := page.Messages[0]
	if e.ErrorMessage != "poison" || e.TransactionID != m.TransactionID || e.Queue != q.Name() ||
		e.ConsumerGroup != "__QUEUE_MODE__" || string(e.Data) != `{"n":7}` || e.FailedAt.IsZero() {
		t.Fatalf("DLQ entry: %+v", e)
	}
	if page, _ := q.DLQ(ctx, queen.DLQQuery{ConsumerGroup: "nobody"}); page.Total != 0 {
		t.Fatalf("group filter: %+v", page)
	}
	if page, _ := q.DLQ(ctx, queen.DLQQuery{From: time.Now().Add(time.Hour)}); page.Total != 0 {
		t.Fatalf("from filter: %+v", page)
	}
}

func TestExtendLease(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c, queen.LeaseTime(time.Second))
	mustPush(t, q, numbered(2)...)
	b, _ := q.Pop(ctx, queen.PopOptions{Wait: wait})
	res, err := c.ExtendLease(ctx, b.LeaseID, 30*time.Second)
	if err != nil || res.Status != queen.LeaseExtended || time.Until(res.ExpiresAt) < 20*time.Second {
		t.Fatalf("extend: %v %+v", err, res)
	}
	_, _ = c.Ack(ctx, b.Messages[0].Ack(queen.AckCompleted))
	if res, _ := c.ExtendLease(ctx, b.LeaseID, 0); res.Status != queen.LeaseNotFound || res.Error != "Lease not found" {
		t.Fatalf("released lease: %+v", res)
	}
	b, _ = q.Pop(ctx, queen.PopOptions{Wait: wait})
	time.Sleep(1200 * time.Millisecond) // real elapsed time, not an ordering: the 1 s lease runs out
	if res, _ := c.ExtendLease(ctx, b.LeaseID, time.Minute); res.Status != queen.LeaseExpired || !res.ExpiresAt.IsZero() {
		t.Fatalf("expired lease: %+v", res)
	}
	if _, err := c.ExtendLease(ctx, "", time.Minute); err == nil {
		t.Fatal("empty lease id accepted")
	}
}

func TestPopLongPollWakesOnPush(t *testing.T) {
	t.Parallel()
	// A broker of its own, whose fallback poll is an hour away, and a pop whose own deadline is
	// a minute away: an answer within 10 s came from the push's wake-up, not from the attempt a
	// pop makes at its deadline.
	srv := testserver.Start(t, testDSN, testserver.Options{PollInitial: time.Hour, PollMax: time.Hour})
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	q := c.Queue(queueName(t))
	popped := make(chan error, 1)
	var b *queen.Batch
	go func() {
		var err error
		b, err = q.Pop(ctx, queen.PopOptions{Wait: time.Minute})
		popped <- err
	}()
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if srv.Broker.Hub().Idle() != 1 {
			return errors.New("the pop has not parked after an empty first attempt")
		}
		return nil
	})
	mustPush(t, q, map[string]int{"n": 1})
	select {
	case err := <-popped:
		if err != nil || len(b.Messages) != 1 {
			t.Fatalf("long poll: %v %+v", err, b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not woken by the push")
	}
	// A long poll that finds nothing answers empty at its deadline.
	start := time.Now()
	b, err = q.Pop(ctx, queen.PopOptions{Wait: 300 * time.Millisecond})
	if err != nil || !b.Empty() || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("empty long poll: %v %+v after %s", err, b, time.Since(start))
	}
}

func TestPopGroupsSubscriptionsAutoAckPartitions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q.Partition("p1"), map[string]int{"n": 1})
	mustPush(t, q.Partition("p2"), map[string]int{"n": 2})

	// A group subscribed to new messages does not see the two already stored.
	b, err := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "late", SubscriptionMode: queen.SubscriptionNew})
	if err != nil || !b.Empty() {
		t.Fatalf("new-mode group: %v %+v", err, b)
	}
	// A fresh group reads everything; partitions=2 claims both under one lease; autoAck
	// consumes them on delivery.
	b, err = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "all", Batch: 10, Partitions: 2, AutoAck: true, Wait: wait})
	if err != nil || len(b.Messages) != 2 || b.PartitionsClaimed != 2 || b.LeaseID != "" || b.ConsumerGroup != "all" {
		t.Fatalf("multi-partition autoAck pop: %v %+v", err, b)
	}
	if b, _ = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "all", Partitions: 2}); !b.Empty() {
		t.Fatalf("autoAck did not consume: %+v", b)
	}
	// Queue mode is independent of the groups.
	if b, _ = q.Partition("p2").Pop(ctx, queen.PopOptions{Wait: wait}); len(b.Messages) != 1 || b.Messages[0].Partition != "p2" {
		t.Fatalf("partition pop: %+v", b)
	}
	mustPush(t, q.Partition("p1"), map[string]int{"n": 3})
	b, _ = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "late", Wait: 5 * time.Second})
	if len(b.Messages) != 1 || payloadOf(t, b.Messages[0]) != 3 {
		t.Fatalf("new-mode group after a push: %+v", b)
	}
	// subscriptionFrom as a timestamp in the future: nothing yet.
	b, err = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "future", SubscriptionFrom: queen.FromTime(time.Now().Add(time.Hour))})
	if err != nil || !b.Empty() {
		t.Fatalf("from future: %v %+v", err, b)
	}
	b, err = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "now", SubscriptionFrom: queen.FromNow})
	if err != nil || !b.Empty() {
		t.Fatalf("from now: %v %+v", err, b)
	}
	_, err = q.Pop(ctx, queen.PopOptions{ConsumerGroup: "g", SubscriptionMode: "bogus"})
	var he *queen.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Message != "Invalid subscriptionMode: bogus" {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestPopNamespace(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	ns := queueName(t)
	low := createQueue(t, c, queen.Namespace(ns), queen.Task("work"), queen.Priority(1))
	high := createQueue(t, c, queen.Namespace(ns), queen.Task("work"), queen.Priority(9))
	mustPush(t, low, map[string]int{"n": 1})
	mustPush(t, high, map[string]int{"n": 2})
	b, err := c.PopNamespace(ctx, ns, "work", queen.PopOptions{AutoAck: true})
	if err != nil || len(b.Messages) != 1 || b.Messages[0].Queue != high.Name() {
		t.Fatalf("priority pop: %v %+v", err, b)
	}
	b, err = c.PopNamespace(ctx, ns, "", queen.PopOptions{AutoAck: true})
	if err != nil || len(b.Messages) != 1 || b.Messages[0].Queue != low.Name() {
		t.Fatalf("namespace-only pop: %v %+v", err, b)
	}
	if _, err := c.PopNamespace(ctx, "", "", queen.PopOptions{}); err == nil {
		t.Fatal("pop without namespace or task accepted")
	}
	if _, err := c.Queue("").Pop(ctx, queen.PopOptions{}); err == nil {
		t.Fatal("pop without queue accepted")
	}
}
