package sdktest

import (
	"context"
	"fmt"
	"log"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/client/streams"
)

// The Go Stream builder end to end, its output checked against a real broker: readings
// carry their own time; 10-second event-time windows sum them per sensor partition and close
// when a later reading moves the watermark past their end.
func Example_streams() {
	ctx := context.Background()
	c, err := queen.New(brokerURL) // e.g. "http://localhost:6632"
	if err != nil {
		log.Fatal(err)
	}
	readings, sums := c.Queue("example-readings"), c.Queue("example-readings.sums")
	for _, q := range []queen.Queue{readings, sums} {
		if _, err := q.Create(ctx); err != nil {
			log.Fatal(err)
		}
	}
	at := func(sec int, v float64) map[string]any {
		return map[string]any{"at": time.Date(2026, 5, 6, 10, 0, sec, 0, time.UTC).Format(time.RFC3339), "value": v}
	}
	if _, err := readings.Partition("sensor-1").Push(ctx, at(1, 2.5), at(4, 1), at(9, 4), at(12, 7)); err != nil {
		log.Fatal(err)
	}

	runner, err := streams.From(readings).
		WindowTumbling(10, streams.EventTime(func(r streams.Record) (time.Time, error) {
			return time.Parse(time.RFC3339, r.Value.(map[string]any)["at"].(string))
		})).
		Aggregate(
			streams.Field("count", func(streams.Record) float64 { return 1 }),
			streams.Field("sum", func(r streams.Record) float64 { return r.Value.(map[string]any)["value"].(float64) }),
		).
		Map(func(r streams.Record) (any, error) {
			v := r.Value.(map[string]any)
			v["window"] = r.Window.Key
			return v, nil
		}).
		To(sums).
		Run(ctx, streams.RunOptions{QueryID: "example-readings.per-10s"})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Stop()

	b, err := sums.Pop(ctx, queen.PopOptions{Batch: 10, Wait: time.Minute, AutoAck: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range b.Messages {
		fmt.Println(m.Partition, string(m.Data))
	}
	// Output:
	// sensor-1 {"count":3,"sum":7.5,"window":"2026-05-06T10:00:00.000Z"}
}
