package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/waiter"
)

// A burst of consumers on a healthy database is load, not an outage (docs/api/operations.md
// §9.7): 200 concurrent single-message pops on 200 partitions, through a pool of 4 connections
// with a DB_CONNECTION_TIMEOUT that every one of them waits longer than, get their 200
// messages, and then their 200 concurrent acks, which wait as long, all succeed. No request
// is answered unavailable and no outage is logged.
//
// The waits are longer than DB_CONNECTION_TIMEOUT by construction, not by the machine's
// speed: the pool's 4 connections are held (holdPool) until the whole burst has waited
// DB_CONNECTION_TIMEOUT and more, so every wait for a pooled connection asks the outage probe,
// which must open a new connection and answer within DB_CONNECTION_TIMEOUT. That is 1 s, not
// less: beside two busy loops and the rest of the suite a new backend took up to 0.5 s (with
// 50 ms the probe failed, an outage by definition, and pool dials timed out; 250 ms is still
// below that).
// Holding the pool also opens its 4 connections before the burst, so none is dialled during it.
func TestBurstOfPopsAndAcksIsLoadNotAnOutage(t *testing.T) {
	const timeout = time.Second // DB_CONNECTION_TIMEOUT
	ctx := context.Background()
	var log testkit.LogBuffer
	logger := log.Logger()
	st, err := store.Open(ctx, store.Options{DSN: testDSN, MaxConns: 4, ConnectTimeout: timeout,
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
	held := queueName(t)

	popped := make([]mq.PopResult, n)
	errs := make([]error, n)
	burst(t, st, held, timeout, "pop", n, func(i int) error {
		var err error
		popped[i], err = b.Pop(budget.Request(ctx), mq.PopRequest{Queue: q, Partition: fmt.Sprintf("p%03d", i), Batch: 1})
		return err
	}, errs)
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
	burst(t, st, held, timeout, "ack", n, func(i int) error {
		m := popped[i].Messages[0]
		res, err := b.Ack(budget.Request(ctx), []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
			LeaseID: popped[i].LeaseID, Group: mq.QueueMode, Status: mq.AckCompleted}})
		if len(res) == 1 {
			acked[i] = res[0]
		}
		return err
	}, errs)
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

// burst runs call(0) .. call(n-1) at once, each error into errs, while holdPool keeps every
// connection of st taken until the last of them has waited timeout (DB_CONNECTION_TIMEOUT)
// and half a second more: each wait for a pooled connection passes the point where it asks
// the outage probe. It fails the test if a call answered sooner than timeout after it began,
// which only a broken hold would let it do.
func burst(t *testing.T, st *store.Store, held string, timeout time.Duration, what string, n int,
	call func(i int) error, errs []error) {
	t.Helper()
	release := holdPool(t, st, held)
	took := make([]time.Duration, n)
	var started atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			started.Add(1)
			errs[i] = call(i)
			took[i] = time.Since(start)
		})
	}
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		if s := started.Load(); s < int32(n) {
			return fmt.Errorf("%d of %d %ss started", s, n, what)
		}
		return nil
	})
	// Real elapsed time, not an ordering: a broken hold shows as a call answered before this.
	time.Sleep(timeout + 500*time.Millisecond)
	release()
	wg.Wait()
	var longest time.Duration
	for i := range n {
		longest = max(longest, took[i])
		if took[i] <= timeout && errs[i] == nil {
			t.Errorf("%s %d answered %v after it began, not after DB_CONNECTION_TIMEOUT (%v): the pool was not held",
				what, i, took[i], timeout)
		}
	}
	t.Logf("%d %ss waited longer than DB_CONNECTION_TIMEOUT (%v), the longest %v", n, what, timeout, longest.Round(time.Millisecond))
}

// holdPool takes every connection of st's pool until release is called: one push per
// connection into partition "held" of queue q, whose row another session keeps locked, so that
// each waits on a pooled connection of its own (the first for the row, the others behind it).
// It returns once all of them wait for a lock: the pool's connections are then open and taken
// (the test runs alone in the package database). A push whose connection could not be opened
// in time (ErrBusy: a dial past DB_CONNECTION_TIMEOUT on a loaded machine) is sent again.
func holdPool(t *testing.T, st *store.Store, q string) (release func()) {
	t.Helper()
	ctx := context.Background()
	push := func() error {
		id := newID()
		_, err := st.Push(ctx, []store.PushRow{{Queue: q, Partition: "held", Key: id, ID: id, Payload: []byte(`{}`)}})
		return err
	}
	if err := push(); err != nil { // the queue and its partition exist before the lock
		t.Fatalf("push to the held partition: %v", err)
	}
	tx, err := rawDB(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var locked int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = 'held' FOR UPDATE OF p) x`, q).Scan(&locked); err != nil || locked != 1 {
		_ = tx.Rollback(ctx)
		t.Fatalf("lock the held partition: %v (%d rows)", err, locked)
	}
	size := int(st.Pool().Max)
	done := make(chan error, size)
	for range size {
		go func() {
			for {
				err := push()
				if !errors.Is(err, mq.ErrBusy) {
					done <- err
					return
				}
			}
		}()
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Rollback(ctx); err != nil {
				t.Errorf("release the held partition: %v", err)
			}
			for range size {
				if err := <-done; err != nil {
					t.Errorf("push holding a pooled connection: %v", err)
				}
			}
		})
	}
	t.Cleanup(release)
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		var waiting int
		// Not on tx: a transaction sees one snapshot of pg_stat_activity.
		if err := rawDB(t).QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND cardinality(pg_blocking_pids(pid)) > 0`).Scan(&waiting); err != nil {
			return err
		}
		if waiting != size {
			return fmt.Errorf("%d pushes wait for the held partition, want %d (the pool size)", waiting, size)
		}
		return nil
	})
	return release
}
