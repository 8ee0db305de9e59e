package streams_test

import (
	"context"
	"fmt"
	"log"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/client/streams"
)

// Per-partition totals per minute, written to a sink queue in the cycle that acks the orders.
// (client/examples/streams-window is the runnable program.)
func ExampleFrom() {
	ctx := context.Background()
	c, _ := queen.New("http://localhost:6632")
	runner, err := streams.From(c.Queue("orders")).
		WindowTumbling(60, streams.GracePeriod(1), streams.IdleFlush(1000)).
		Aggregate(
			streams.Field("count", func(streams.Record) float64 { return 1 }),
			streams.Field("sum", func(r streams.Record) float64 { return r.Value.(map[string]any)["amount"].(float64) }),
		).
		To(c.Queue("orders.totals")).
		Run(ctx, streams.RunOptions{QueryID: "orders.per_min"})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Stop()
}

// Event time: windows follow a timestamp in the payload and close on the partition's
// watermark, 5 seconds behind the largest timestamp seen.
func ExampleEventTime() {
	c, _ := queen.New("http://localhost:6632")
	s := streams.From(c.Queue("clicks")).
		KeyBy(func(r streams.Record) (string, error) { return r.Value.(map[string]any)["page"].(string), nil }).
		WindowSliding(60, 10, streams.EventTime(func(r streams.Record) (time.Time, error) {
			return time.Parse(time.RFC3339, r.Value.(map[string]any)["at"].(string))
		}), streams.AllowedLateness(5)).
		Aggregate(streams.Field("count", func(streams.Record) float64 { return 1 })).
		Foreach(func(r streams.Record) error {
			fmt.Println(r.Key, r.Window.Key, r.Value)
			return nil
		})
	fmt.Println(s.Compile() == nil)
	// Output: true
}

// The config_hash is the official SDKs' (docs/api/streams.md §7.1): this chain is
// Stream.from(q).windowTumbling({seconds: 60}).aggregate({sum}).to(queen.queue('orders.totals'))
// in JavaScript.
func ExampleStream_ConfigHash() {
	c, _ := queen.New("http://localhost:6632")
	s := streams.From(c.Queue("orders")).
		WindowTumbling(60).
		Aggregate(streams.Field("sum", func(streams.Record) float64 { return 0 })).
		To(c.Queue("orders.totals"))
	fmt.Println(s.ConfigHash())
	// Output: 5def717495a2aa054a590729dd2148b427108dc13cd605d1c5eec3b00a13a5ba
}

// A token bucket: 5 messages per second per partition. Denied messages come back in order
// when the source lease expires.
func ExampleStream_Gate() {
	c, _ := queen.New("http://localhost:6632")
	s := streams.From(c.Queue("requests")).
		Gate(func(r streams.Record, g *streams.GateContext) (bool, error) {
			now := float64(g.StreamTimeMs)
			tokens, ok := g.State["tokens"].(float64)
			last, _ := g.State["lastRefillAt"].(float64)
			if !ok {
				tokens, last = 5, now
			}
			tokens = min(5, tokens+(now-last)/1000*5)
			g.State["lastRefillAt"] = now
			if tokens < 1 {
				return false, nil
			}
			g.State["tokens"] = tokens - 1
			return true, nil
		}).
		To(c.Queue("requests.allowed"))
	fmt.Println(s.Compile() == nil)
	// Output: true
}
