// Command streams-ratelimit forwards requests from one queue to another at most 5 per second
// per tenant partition, with a token-bucket Gate. Denied requests are not lost or reordered:
// the gate keeps the lease and they come back, in order, when it expires.
//
//	go run ./examples/streams-ratelimit -server http://localhost:6632
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
	requests, allowed := c.Queue("examples.requests"), c.Queue("examples.requests.allowed")
	// The lease is how long denied requests wait before they are offered again.
	if _, err := requests.Create(ctx, queen.LeaseTime(2*time.Second)); err != nil {
		log.Fatal(err)
	}
	if _, err := allowed.Create(ctx); err != nil {
		log.Fatal(err)
	}
	for i := range 20 {
		if _, err := requests.Partition("tenant-a").Push(ctx, map[string]any{"n": i}); err != nil {
			log.Fatal(err)
		}
	}
	const capacity, refillPerSec = 5.0, 5.0
	runner, err := streams.From(requests).
		Gate(func(r streams.Record, g *streams.GateContext) (bool, error) {
			now := float64(g.StreamTimeMs)
			tokens, ok := g.State["tokens"].(float64)
			last, _ := g.State["lastRefillAt"].(float64)
			if !ok {
				tokens, last = capacity, now
			}
			tokens = min(capacity, tokens+(now-last)/1000*refillPerSec)
			g.State["lastRefillAt"] = now
			if tokens < 1 {
				g.State["tokens"] = tokens
				return false, nil
			}
			g.State["tokens"] = tokens - 1
			return true, nil
		}).
		To(allowed).
		Run(ctx, streams.RunOptions{QueryID: "examples.requests.limiter"})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Stop()
	start, got := time.Now(), 0
	for got < 20 && ctx.Err() == nil {
		b, err := allowed.Pop(ctx, queen.PopOptions{Batch: 20, Wait: 5 * time.Second, AutoAck: true})
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range b.Messages {
			got++
			fmt.Printf("%5.1fs %s\n", time.Since(start).Seconds(), m.Data)
		}
	}
	fmt.Printf("%+v\n", runner.Metrics())
}
