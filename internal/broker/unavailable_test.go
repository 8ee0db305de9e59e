package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// With no database, every data operation fails with mq.ErrUnavailable (the wire answers 503
// for it: httpapi's TestUnavailableDatabase), a long poll included: a failed first attempt
// is returned, not waited out.
func TestBrokerUnavailableDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: "postgres://postgres@127.0.0.1:1/x?connect_timeout=1&sslmode=disable",
		MaxConns: 2, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hub := waiter.NewHub()
	t.Cleanup(func() { hub.Close(); st.Close() })
	b := New(st, hub, Config{}, nil)
	_, err = b.Push(ctx, []mq.PushItem{item("q", "", "k", "1")}, nil)
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, mq.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", op, err)
		}
	}
	check("push", err)
	_, err = b.Pop(ctx, mq.PopRequest{Queue: "q"})
	check("pop", err)
	_, err = b.Pop(ctx, mq.PopRequest{Queue: "q", Wait: true, Deadline: time.Now().Add(time.Hour)})
	check("waiting pop", err)
	_, err = b.Ack(ctx, []mq.AckItem{{PartitionID: "00000000-0000-0000-0000-000000000000", TransactionID: "k",
		Group: mq.QueueMode, Status: mq.AckCompleted}})
	check("ack", err)
	if hub.Parked() != 0 {
		t.Errorf("%d pops left parked", hub.Parked())
	}
}
