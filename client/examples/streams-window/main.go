// Command streams-window totals orders per customer partition and minute with the Go Stream
// builder, and prints the totals a second stream reads from the sink.
//
//	go run ./examples/streams-window -server http://localhost:6632
//
// It pushes a few orders, runs a 60-second tumbling window (closed by the idle flush one
// second after its end), and exits after the first totals arrive. Run it again: the query
// "examples.orders.per_min" resumes from its state and cursor in the broker.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/client/streams"
)

func main() {
	server := flag.String("server", "http://localhost:6632", "broker URL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := queen.New(*server)
	if err != nil {
		log.Fatal(err)
	}
	orders, totals := c.Queue("examples.orders"), c.Queue("examples.orders.totals")
	for _, q := range []queen.Queue{orders, totals} {
		if _, err := q.Create(ctx); err != nil {
			log.Fatal(err)
		}
	}
	for i, amount := range []float64{12.5, 30, 7.25} {
		if _, err := orders.Partition("cust-42").Push(ctx, map[string]any{"orderId": i, "amount": amount}); err != nil {
			log.Fatal(err)
		}
	}

	runner, err := streams.From(orders).
		WindowTumbling(60, streams.GracePeriod(1), streams.IdleFlush(1000)).
		Aggregate(
			streams.Field("count", func(streams.Record) float64 { return 1 }),
			streams.Field("sum", func(r streams.Record) float64 { return r.Value.(map[string]any)["amount"].(float64) }),
		).
		Map(func(r streams.Record) (any, error) {
			v := r.Value.(map[string]any)
			v["minute"] = r.Window.Key
			return v, nil
		}).
		To(totals).
		Run(ctx, streams.RunOptions{QueryID: "examples.orders.per_min",
			OnError: func(err error, phase string) { log.Printf("%s: %v", phase, err) }})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Stop()
	fmt.Println("query", runner.QueryID(), "config_hash", runner.ConfigHash())
	fmt.Println("waiting for the current minute to close…")
	for ctx.Err() == nil {
		b, err := totals.Pop(ctx, queen.PopOptions{Batch: 10, Wait: 10 * time.Second, AutoAck: true})
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range b.Messages {
			fmt.Printf("%s %s\n", m.Partition, m.Data)
		}
		if !b.Empty() {
			return
		}
	}
}
