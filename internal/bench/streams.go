package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/client/streams"
)

// streamsCycle measures POST /streams/v1/cycle: ack-less cycles (an idle flush's shape) of
// StateOps upserts each, spread over Partitions state shards by Conns workers. Cycles of one
// shard serialize on its lock (docs/api/streams.md §4.2), so shards bound the parallelism.
// The rate is cycles per second; Messages counts cycles.
func (r *runner) streamsCycle(ctx context.Context) (Result, error) {
	ops := max(r.cfg.StateOps, 1)
	parts := max(r.cfg.Partitions, 1)
	queryID, err := r.registerStream(ctx, r.queue)
	if err != nil {
		return Result{}, err
	}
	pids, err := r.partitionIDs(ctx, parts)
	if err != nil {
		return Result{}, err
	}
	// Bodies are built once per shard; the value changes nothing the broker does.
	bodies := make([][]byte, parts)
	for p, pid := range pids {
		var b strings.Builder
		fmt.Fprintf(&b, `{"query_id":%q,"partition_id":%q,"state_ops":[`, queryID, pid)
		for i := range ops {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"upsert","key":"tumb:60\u001f2026-01-01T00:00:00.000Z\u001fk%d","value":{"acc":{"count":%d},"windowStart":0,"windowEnd":60000}}`, i, i)
		}
		b.WriteString(`],"push_items":[],"ack":null,"release_lease":true}`)
		bodies[p] = []byte(b.String())
	}
	var seq atomic.Int64
	res := r.measure(ctx, "streams-cycle", r.cfg.Conns, nil, func(ctx context.Context, _ int, rec *recorder) error {
		body := bodies[int(seq.Add(1))%len(bodies)]
		var ans struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		t := time.Now()
		if _, err := r.api.call(ctx, http.MethodPost, "/streams/v1/cycle", body, &ans); err != nil {
			return err
		}
		if !ans.Success {
			return fmt.Errorf("cycle rolled back: %s", ans.Error)
		}
		rec.ok(time.Since(t), 1)
		return nil
	})
	res.Scenario = fmt.Sprintf("streams-cycle/%d-ops", ops)
	res.Params = fmt.Sprintf("stateOps=%d conns=%d shards=%d (rate = cycles/s)", ops, r.cfg.Conns, parts)
	return res, nil
}

// registerStream registers a query over source and returns its id.
func (r *runner) registerStream(ctx context.Context, source string) (string, error) {
	body, _ := json.Marshal(map[string]any{"name": "bench." + source, "source_queue": source, "config_hash": "bench"})
	var reg struct {
		QueryID string `json:"query_id"`
	}
	if _, err := r.api.call(ctx, http.MethodPost, "/streams/v1/queries", body, &reg); err != nil {
		return "", fmt.Errorf("register the query: %w", err)
	}
	return reg.QueryID, nil
}

// partitionIDs creates n partitions of the runner's queue (one message each) and returns
// their ids, read back through a pop that is not acked (the ids are all the cycle needs).
func (r *runner) partitionIDs(ctx context.Context, n int) ([]string, error) {
	if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", r.pushBody(r.queue, n, func(i int) int { return i }, 0), nil); err != nil {
		return nil, fmt.Errorf("create the partitions: %w", err)
	}
	seen := map[string]bool{}
	var ids []string
	for len(ids) < n {
		var p popAnswer
		q := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&autoAck=true&wait=true&timeout=1000&partitions=%d", r.queue, n, n)
		if _, err := r.api.call(ctx, http.MethodGet, q, nil, &p); err != nil {
			return nil, err
		}
		if len(p.Messages) == 0 {
			return nil, fmt.Errorf("found %d of %d partitions", len(ids), n)
		}
		for _, m := range p.Messages {
			if !seen[m.PartitionID] {
				seen[m.PartitionID] = true
				ids = append(ids, m.PartitionID)
			}
		}
	}
	return ids, nil
}

// streamsWindow runs a tumbling-window pipeline with the Go SDK (client/streams): a producer
// offers Rate messages per second over Partitions partitions, a runner counts them per
// second-long window and writes each closed window to a sink queue, and consumers long-poll
// the sink. The latency of a window is the time from its end to its aggregate's delivery: the
// soonest a window can be final is its end, so this is what a user of the window waits.
func (r *runner) streamsWindow(ctx context.Context) (Result, error) {
	rate := max(r.cfg.Rate, 1)
	parts := max(r.cfg.Partitions, 1)
	c, err := queen.New(r.cfg.Server)
	if err != nil {
		return Result{}, err
	}
	sink := r.queue + "-sink"
	// The sink exists before the consumers' first pops.
	if _, err := c.Queue(sink).Create(ctx); err != nil {
		return Result{}, err
	}
	runner, err := streams.From(c.Queue(r.queue)).
		WindowTumbling(1, streams.IdleFlush(100)).
		Aggregate(streams.Field("count", func(streams.Record) float64 { return 1 })).
		Map(func(rec streams.Record) (any, error) {
			v := rec.Value.(map[string]any)
			v["windowEnd"] = rec.Window.End.UnixMilli()
			return v, nil
		}).
		To(c.Queue(sink)).
		Run(ctx, streams.RunOptions{QueryID: "bench." + r.queue, MaxWait: 100 * time.Millisecond, MaxPartitions: parts})
	if err != nil {
		return Result{}, err
	}
	defer runner.Stop()
	prodCtx, stop := context.WithTimeout(ctx, r.cfg.Duration)
	defer stop()
	go func() {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-prodCtx.Done():
				return
			case <-t.C:
				go r.api.call(prodCtx, http.MethodPost, "/api/v1/push", r.pushBody(r.queue, 1, func(int) int { return seq % parts }, seq), nil)
			}
		}
	}()
	var windows atomic.Int64
	res := r.measure(ctx, "streams-window", max(r.cfg.Conns, 1), nil, func(ctx context.Context, _ int, rec *recorder) error {
		var p popAnswer
		q := fmt.Sprintf("/api/v1/pop/queue/%s?batch=100&autoAck=true&wait=true&timeout=1000", sink)
		code, err := r.api.call(ctx, http.MethodGet, q, nil, &p)
		if err != nil || code == http.StatusNoContent {
			return err
		}
		now := time.Now().UnixMilli()
		for _, m := range p.Messages {
			var body struct {
				Count     float64 `json:"count"`
				WindowEnd int64   `json:"windowEnd"`
			}
			if json.Unmarshal(m.Data, &body) == nil {
				windows.Add(1)
				rec.ok(time.Duration(now-body.WindowEnd)*time.Millisecond, int(body.Count))
			}
		}
		return nil
	})
	m := runner.Metrics()
	res.Params = fmt.Sprintf("rate=%d/s partitions=%d window=1s idleFlush=100ms; windows=%d cycles=%d flushCycles=%d runnerErrors=%d (latency = window end to sink delivery; messages = messages in delivered windows)",
		rate, parts, windows.Load(), m.Cycles, m.FlushCycles, m.Errors)
	return res, nil
}
