package sdktest

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	queen "github.com/queen-go/queen/client"
)

// The examples of the client (package queen) that talk to a broker, run with their output
// checked against a real one. The client module keeps those that need none (ExampleNew, …).

// The whole round trip: create a queue, push, pop, ack.
func Example() {
	ctx := context.Background()
	c, err := queen.New(brokerURL) // e.g. "http://localhost:6632"
	if err != nil {
		log.Fatal(err)
	}
	orders := c.Queue("example-orders")
	if _, err := orders.Create(ctx, queen.LeaseTime(30*time.Second), queen.RetryLimit(5)); err != nil {
		log.Fatal(err)
	}
	res, err := orders.Partition("customer-42").Push(ctx, map[string]any{"orderId": 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("push:", res[0].Status)

	batch, err := orders.Pop(ctx, queen.PopOptions{Batch: 10, Wait: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range batch.Messages {
		fmt.Println("popped:", string(m.Data), "from", m.Partition)
		ack, err := c.Ack(ctx, m.Ack(queen.AckCompleted))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("ack:", ack.Outcome)
	}
	// Output:
	// push: queued
	// popped: {"orderId":1} from customer-42
	// ack: applied
}

// A transactionId makes a push idempotent: the second push of the same key is a duplicate.
func ExampleQueue_Push() {
	ctx := context.Background()
	c, _ := queen.New(brokerURL)
	q := c.Queue("example-push").Partition("customer-42")
	for range 2 {
		res, err := q.Push(ctx, queen.Item{Payload: map[string]int{"orderId": 8891}, TransactionID: "order-8891"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res[0].TransactionID, res[0].Status)
	}
	// Output:
	// order-8891 queued
	// order-8891 duplicate
}

// A worker: each message is acked completed when the handler returns nil, failed when it
// returns an error; long handlers keep their lease. Cancel ctx to stop gracefully.
func ExampleQueue_Consume() {
	ctx := context.Background()
	c, _ := queen.New(brokerURL)
	q := c.Queue("example-consume")
	if _, err := q.Push(ctx, "a", "b", "c"); err != nil {
		log.Fatal(err)
	}
	err := q.Consume(ctx, func(ctx context.Context, m *queen.Message) error {
		var s string
		if err := m.Decode(&s); err != nil {
			return queen.AckAs(queen.AckDLQ, err) // unreadable: no point retrying
		}
		fmt.Println("handled", s)
		return nil
	}, queen.ConsumeOptions{BatchSize: 10, Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// handled a
	// handled b
	// handled c
}

// A pipeline stage: ack the input and push its output atomically. The output's key is
// derived from the input, so a retry after a lost answer cannot write it twice.
func ExampleTransaction() {
	ctx := context.Background()
	c, _ := queen.New(brokerURL)
	if _, err := c.Queue("example-orders-in").Push(ctx, map[string]int{"orderId": 8891}); err != nil {
		log.Fatal(err)
	}
	batch, _ := c.Queue("example-orders-in").Pop(ctx, queen.PopOptions{Wait: 5 * time.Second})
	in := batch.Messages[0]

	tx := c.Transaction().
		Ack(in, queen.AckCompleted).
		Queue("example-invoices").Partition(in.Partition).Push(queen.Item{
		Payload:       map[string]int{"invoiceFor": 8891},
		TransactionID: queen.DerivedTransactionID(in, "invoice"),
	})
	for range 2 { // the second commit plays a retry after a lost answer
		res, err := tx.Commit(ctx)
		var rollback *queen.TxnError
		switch {
		case errors.As(err, &rollback) && errors.Is(err, queen.ErrLeaseLost):
			return // the input will come back; drop this attempt
		case err != nil:
			log.Fatal(err)
		}
		fmt.Println(res.Status)
	}
	// Output:
	// committed
	// already_committed
}

// A high-volume producer batches pushes on the client; Close sends what is left.
func ExampleQueue_Buffer() {
	ctx := context.Background()
	c, _ := queen.New(brokerURL)
	buf, err := c.Queue("example-buffer").Buffer(queen.BufferOptions{MaxCount: 500, MaxDelay: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 1200 {
		if err := buf.Push(ctx, map[string]int{"i": i}); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("waiting before close:", buf.Len())
	if err := c.Close(ctx); err != nil { // flushes every buffer of the client
		log.Fatal(err)
	}
	fmt.Println("waiting after close:", buf.Len())
	// Output:
	// waiting before close: 200
	// waiting after close: 0
}

// Settling several messages in one request; rejected items do not stop the others.
func ExampleClient_AckBatch() {
	ctx := context.Background()
	c, _ := queen.New(brokerURL)
	q := c.Queue("example-ackbatch")
	if _, err := q.Push(ctx, 1, 2); err != nil {
		log.Fatal(err)
	}
	b, _ := q.Pop(ctx, queen.PopOptions{Batch: 2, Wait: 5 * time.Second})
	res, err := c.AckBatch(ctx,
		b.Messages[0].Ack(queen.AckCompleted),
		b.Messages[1].Ack(queen.AckFailed).WithError("validation failed"))
	if err != nil {
		log.Fatal(err)
	}
	// LeaseReleased describes the pair after the whole request: the failed ack released it.
	for _, r := range res {
		fmt.Println(r.Index, r.Outcome, "lease released:", r.LeaseReleased)
	}
	// Output:
	// 0 applied lease released: true
	// 1 applied lease released: true
}
