package broker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// The maintenance flags are shared by every broker of a schema, so these tests run their
// brokers in schemas of their own: a mode turned on here never reaches another test's pops.

// maintBroker is newBroker over a schema of its own (migrated on first use), so that the
// maintenance modes it turns on reach no other test.
func maintBroker(t *testing.T, schema string, cfg Config) *tb {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: testDSN, Schema: schema, MaxConns: 4, ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		t.Fatalf("migrate %s: %v", schema, err)
	}
	hub := waiter.NewHub()
	cfg.PushCalls, cfg.WithoutListener = 2, true
	b := New(st, hub, cfg, slog.New(slog.DiscardHandler))
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		hub.Close()
		b.Stop()
		st.Close()
	})
	return &tb{t: t, st: st, b: b}
}

// setMode changes a mode through the broker, failing the test on error.
func (x *tb) setMode(mode mq.MaintenanceMode, on bool) mq.MaintenanceState {
	x.t.Helper()
	m, err := x.b.SetMaintenance(context.Background(), mode, on, nil, "test")
	if err != nil {
		x.t.Fatalf("set %s maintenance %v: %v", mode, on, err)
	}
	return m
}

// awaitEmpty requires a background pop to answer empty, without error, within wakeBound.
func awaitEmpty(t *testing.T, ch <-chan popResult) {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || len(r.res.Messages) != 0 {
			t.Fatalf("pop answered %+v, %v; want empty", r.res.Messages, r.err)
		}
	case <-time.After(wakeBound):
		t.Fatal("the parked pop was not answered")
	}
}

// Turning pop maintenance on answers a parked pop (empty) at once, not at its deadline nor at
// its fallback poll (an hour away); while it is on, pops answer empty even with messages
// waiting, long polls included; once off, the message is delivered.
func TestPopMaintenanceAnswersParkedPopsAndEveryPop(t *testing.T) {
	x := maintBroker(t, "bm_pop", slowPoll)
	q := queueName(t)
	parked := x.parkedPop(mq.PopRequest{Queue: q, Batch: 1})
	if m := x.setMode(mq.PopMaintenance, true); !m.Pop || m.Push {
		t.Fatalf("after turning pop maintenance on: %+v", m)
	}
	awaitEmpty(t, parked)

	x.push(item(q, "p", "k1", `1`)) // pushes are unaffected
	if got := x.pop(mq.PopRequest{Queue: q, Batch: 1}); len(got.Messages) != 0 {
		t.Fatalf("pop during pop maintenance delivered %+v", got.Messages)
	}
	long := make(chan popResult, 1)
	go func() {
		res, err := x.b.Pop(context.Background(), mq.PopRequest{Queue: q, Batch: 1, Wait: true, Deadline: time.Now().Add(time.Hour)})
		long <- popResult{res, err}
	}()
	awaitEmpty(t, long)

	x.setMode(mq.PopMaintenance, false)
	if got := x.pop(mq.PopRequest{Queue: q, Batch: 1}); len(got.Messages) != 1 || got.Messages[0].TransactionID != "k1" {
		t.Fatalf("pop after pop maintenance delivered %+v, want k1", got.Messages)
	}
}

// Push maintenance refuses pushes (the spool that would take them is not wired: nothing is
// written, ErrPushMaintenance) and leaves transactions, pops and acks alone.
func TestPushMaintenanceRefusesOnlyPushes(t *testing.T) {
	x := maintBroker(t, "bm_push", Config{})
	q := queueName(t)
	x.push(item(q, "p", "before", `1`))
	if m := x.setMode(mq.PushMaintenance, true); !m.Push || m.Pop || !x.b.PushMaintenance() {
		t.Fatalf("after turning push maintenance on: %+v", m)
	}
	if res, err := x.b.Push(context.Background(), []mq.PushItem{item(q, "p", "during", `2`)}, nil); !errors.Is(err, mq.ErrPushMaintenance) || res != nil {
		t.Fatalf("push during push maintenance: %+v, %v; want ErrPushMaintenance", res, err)
	}
	out, err := x.b.Transaction(context.Background(), []mq.TxnEntry{{Push: item(q, "p", "txn", `3`)}}, nil, nil)
	if err != nil || out.Rollback != "" {
		t.Fatalf("transaction during push maintenance: %+v, %v", out, err)
	}
	p := x.pop(mq.PopRequest{Queue: q, Batch: 1})
	if len(p.Messages) != 1 || p.Messages[0].TransactionID != "before" {
		t.Fatalf("pop during push maintenance: %+v", p.Messages)
	}
	if r := x.ackOne(p, "", mq.AckCompleted); !r.Success {
		t.Fatalf("ack during push maintenance: %+v", r)
	}
	x.setMode(mq.PushMaintenance, false)
	x.push(item(q, "p", "after", `4`))
}

// A broker reads the modes when it starts, so its first pop already obeys them.
func TestMaintenanceModesReadAtStart(t *testing.T) {
	x := maintBroker(t, "bm_start", Config{})
	x.setMode(mq.PopMaintenance, true)
	y := maintBroker(t, "bm_start", Config{})
	if !y.b.PopMaintenance() || y.b.PushMaintenance() {
		t.Fatalf("a broker started during pop maintenance knows %+v", y.b.Maintenance())
	}
	x.setMode(mq.PopMaintenance, false)
}

// An older state never replaces a newer one, whatever the order of arrival (a fallback read
// started before a change may answer after its notification); a same-version state with the
// change's details replaces one without them (a notification carries only the flags).
func TestMaintenanceStateNeverGoesBack(t *testing.T) {
	b := New(nil, waiter.NewHub(), Config{}, slog.New(slog.DiscardHandler))
	at := time.Now()
	b.applyMaintenance(mq.MaintenanceState{Pop: true, Version: 2})
	b.applyMaintenance(mq.MaintenanceState{Pop: false, Version: 1, ChangedAt: &at})
	if !b.PopMaintenance() || b.Maintenance().Version != 2 {
		t.Fatalf("an older state replaced a newer one: %+v", b.Maintenance())
	}
	b.applyMaintenance(mq.MaintenanceState{Pop: true, Version: 2, ChangedAt: &at, ChangedOn: "w"})
	if m := b.Maintenance(); m.ChangedOn != "w" || m.ChangedAt == nil {
		t.Fatalf("the same change with its details was not taken: %+v", m)
	}
	b.applyMaintenance(mq.MaintenanceState{Pop: true, Version: 2})
	if m := b.Maintenance(); m.ChangedOn != "w" {
		t.Fatalf("the same change without details replaced the detailed one: %+v", m)
	}
	b.applyMaintenance(mq.MaintenanceState{Push: true, Version: 3})
	if !b.PushMaintenance() || b.PopMaintenance() {
		t.Fatalf("a newer state was not taken: %+v", b.Maintenance())
	}
}
