package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The sweep scenario measures cost as the work grows: the same push and pop + ack workloads
// over more and more partitions, each step on fresh queues, and the rate of the largest step
// as a share of the reference step's (1,000 partitions when swept, else the smallest).

// Defaults of the sweep: its steps, and the workloads of each step (flags override them).
const (
	SweepDefaultSteps        = "10,1000,10000,100000"
	SweepDefaultPushConns    = 50
	SweepDefaultPopConns     = 20
	SweepDefaultBatch        = 10
	sweepReferencePartitions = 1000
	// sweepMinPopMessages is the least a step's pop queue is prefilled with: more than the
	// drain of one phase at the rates seen here, so the phase ends by its duration, not by
	// running dry.
	sweepMinPopMessages = 200000
	// sweepFirstPopWithin bounds the wait for the first pop's messages (sweepPop).
	sweepFirstPopWithin = time.Minute
)

// SweepStep is one step of the sweep: its pushes and its pop + ack cycles, measured apart.
type SweepStep struct {
	Partitions int    `json:"partitions"`
	Push       Result `json:"push"`
	Pop        Result `json:"popAck"`
	// Register is how long the consumers' first pop took, unmeasured: it registers the group
	// on the queue (sweepPop).
	Register time.Duration `json:"registerNanos"`
}

// SweepRatio is one step's rate as a share of another's, for pushes and for pops.
type SweepRatio struct {
	Partitions    int     `json:"partitions"`    // the step measured
	Of            int     `json:"of"`            // the step it is a share of
	Push          float64 `json:"push"`          // its push msgs/s ÷ the other's
	Pop           float64 `json:"popAck"`        // its pop + ack msgs/s ÷ the other's
	PushAndPopMin float64 `json:"pushAndPopMin"` // the lower of the two
}

// ParseSweepSteps reads a comma-separated list of partition counts ("10,1000,10000") into
// distinct positive counts in ascending order.
func ParseSweepSteps(s string) ([]int, error) {
	var steps []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("sweep step %q: want a partition count of 1 or more", f)
		}
		steps = append(steps, n)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("sweep %q: no steps", s)
	}
	slices.Sort(steps)
	return slices.Compact(steps), nil
}

// sweepRatios compares the largest step with the smallest and, when the sweep has a step of
// sweepReferencePartitions smaller than the largest, with that step: the target's figure.
func sweepRatios(steps []SweepStep) []SweepRatio {
	if len(steps) < 2 {
		return nil
	}
	share := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	last := steps[len(steps)-1]
	ratio := func(of SweepStep) SweepRatio {
		r := SweepRatio{Partitions: last.Partitions, Of: of.Partitions,
			Push: share(last.Push.MsgsPerSec, of.Push.MsgsPerSec), Pop: share(last.Pop.MsgsPerSec, of.Pop.MsgsPerSec)}
		r.PushAndPopMin = min(r.Push, r.Pop)
		return r
	}
	out := []SweepRatio{ratio(steps[0])}
	for _, s := range steps[1 : len(steps)-1] {
		if s.Partitions == sweepReferencePartitions {
			out = append(out, ratio(s))
		}
	}
	return out
}

// sweepPopMessages is how many messages a step's pop queue gets: at least min, and a whole
// number of pop batches for every partition, so that every pop can find a full batch.
func sweepPopMessages(partitions, batch, least int) int {
	round := partitions * batch
	n := max(least, round)
	return (n + round - 1) / round * round
}

// sweep runs the sweep scenario. Its Result's top-level figures are the largest step's
// phase (push or pop + ack) that kept the smaller share of the reference step's rate, with
// that step as the baseline; Sweep and SweepRatios carry the rest.
func (r *runner) sweep(ctx context.Context) (Result, error) {
	parts, err := ParseSweepSteps(r.cfg.Sweep)
	if err != nil {
		return Result{}, err
	}
	var steps []SweepStep
	for i, n := range parts {
		step := SweepStep{Partitions: n}
		base := fmt.Sprintf("%s-%d", r.queue, n)
		if step.Push, err = r.sweepPush(ctx, base+"-push", n); err != nil {
			return Result{}, fmt.Errorf("sweep over %d partitions, pushes: %w", n, err)
		}
		if step.Pop, step.Register, err = r.sweepPop(ctx, base+"-pop", n); err != nil {
			return Result{}, fmt.Errorf("sweep over %d partitions, pop + ack: %w", n, err)
		}
		steps = append(steps, step)
		if r.cfg.Progress != nil {
			fmt.Fprintf(r.cfg.Progress, "sweep step %d/%d, %d partitions: push %.0f msgs/s, pop + ack %.0f msgs/s (first pop %s)\n",
				i+1, len(parts), n, step.Push.MsgsPerSec, step.Pop.MsgsPerSec, step.Register.Round(time.Millisecond))
		}
	}
	ratios := sweepRatios(steps)
	last := steps[len(steps)-1]
	res := last.Push
	res.Scenario = fmt.Sprintf("sweep/%s", r.cfg.Sweep)
	res.Params = fmt.Sprintf("push batch=%d conns=%d, pop+ack batch=%d conns=%d, payload=%dB, steps %v partitions",
		r.sweepBatch(), r.sweepConns(), r.sweepBatch(), r.sweepPopConns(), r.cfg.PayloadBytes, parts)
	res.Sweep, res.SweepRatios = steps, ratios
	if len(ratios) > 0 {
		// The target's comparison is the last ratio (the reference step's when swept).
		rt := ratios[len(ratios)-1]
		of := steps[slices.IndexFunc(steps, func(s SweepStep) bool { return s.Partitions == rt.Of })]
		phase, now, then := "push", last.Push, of.Push
		if rt.Pop < rt.Push {
			phase, now, then = "pop+ack", last.Pop, of.Pop
		}
		res = withFigures(res, now)
		res.Scenario = fmt.Sprintf("sweep/%s %d÷%d", phase, rt.Partitions, rt.Of)
		res.Baseline = &Baseline{Name: fmt.Sprintf("%s over %d partitions", phase, rt.Of), RowsPerSec: then.MsgsPerSec}
		res.Ratio = rt.PushAndPopMin
	}
	return res, nil
}

// withFigures is res with the measured figures of m (not its names or nested results).
func withFigures(res, m Result) Result {
	res.Messages, res.Requests, res.Errors, res.Buffered, res.Elapsed = m.Messages, m.Requests, m.Errors, m.Buffered, m.Elapsed
	res.MsgsPerSec, res.P50, res.P99, res.P999 = m.MsgsPerSec, m.P50, m.P99, m.P999
	res.CPUSeconds, res.PeakRSSBytes, res.CPU, res.RequestsPerCall = m.CPUSeconds, m.PeakRSSBytes, m.CPU, m.RequestsPerCall
	return res
}

func (r *runner) sweepBatch() int    { return cmp0(r.cfg.Batch, SweepDefaultBatch) }
func (r *runner) sweepConns() int    { return cmp0(r.cfg.Conns, SweepDefaultPushConns) }
func (r *runner) sweepPopConns() int { return cmp0(r.cfg.Consumers, SweepDefaultPopConns) }

// cmp0 is v, or def when v is 0.
func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// sweepPush creates the partitions of a fresh queue (one message each, in large spread
// batches, unmeasured) and measures pushes of a batch to one partition each, round robin.
func (r *runner) sweepPush(ctx context.Context, queue string, partitions int) (Result, error) {
	if err := r.prefill(ctx, queue, partitions, partitions); err != nil {
		return Result{}, fmt.Errorf("create the partitions: %w", err)
	}
	batch := r.sweepBatch()
	// Bodies are made per request from a fixed item text (100,000 prebuilt bodies would take
	// 150 MB); the broker mints every message id anyway.
	item := fmt.Sprintf(`{"queue":%q,"payload":%s,"partition":"p`, queue, r.cfg.payload(0))
	var seq atomic.Int64
	res := r.measure(ctx, fmt.Sprintf("sweep/%d push", partitions), r.sweepConns(), nil,
		func(ctx context.Context, _ int, rec *recorder) error {
			body := sweepPushBody(item, batch, int(seq.Add(1)-1)%partitions)
			t := time.Now()
			var ans pushAnswer
			if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, &ans); err != nil {
				return err
			}
			rec.pushed(time.Since(t), batch, ans.Buffered)
			return nil
		})
	res.Params = fmt.Sprintf("batch=%d conns=%d partitions=%d payload=%dB", batch, r.sweepConns(), partitions, r.cfg.PayloadBytes)
	return res, nil
}

// sweepPushBody is a push of n copies of item (which ends in an open partition name) to
// partition p.
func sweepPushBody(item string, n, p int) []byte {
	b := make([]byte, 0, 16+n*(len(item)+12))
	b = append(b, `{"items":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// sweepPop prefills a fresh queue evenly over its partitions and measures pop + ack cycles
// (a batch ack per pop) until the duration passes or the queue is drained. The first pop, one
// cycle, is made before measuring and timed apart (its duration is returned): it registers the
// group on the queue (queue mode too, docs/api/concepts.md §5.3), one step over every partition
// that exists, in which no other pop of the queue gets a message. Over 100,000 partitions that
// took 3–5 s, a third of a 10-s measurement, which is not the pop + ack rate the step compares.
func (r *runner) sweepPop(ctx context.Context, queue string, partitions int) (Result, time.Duration, error) {
	batch := r.sweepBatch()
	total := sweepPopMessages(partitions, batch, cmp0(r.cfg.Messages, sweepMinPopMessages))
	if err := r.prefill(ctx, queue, total, partitions); err != nil {
		return Result{}, 0, fmt.Errorf("prefill: %w", err)
	}
	sub := *r
	sub.queue = queue
	sub.cfg.Batch, sub.cfg.AckMode = batch, "batch"
	first := &recorder{}
	t := time.Now()
	for first.count() == 0 {
		if err := sub.consumeOnce(ctx, queue, "", first); err != nil {
			return Result{}, 0, fmt.Errorf("first pop: %w", err)
		}
		if time.Since(t) > sweepFirstPopWithin {
			return Result{}, 0, fmt.Errorf("first pop: no message within %s", sweepFirstPopWithin)
		}
	}
	register := time.Since(t)
	done := func(rec *recorder) bool { return rec.count()+first.count() >= int64(total) }
	res := sub.measure(ctx, fmt.Sprintf("sweep/%d pop+ack", partitions), r.sweepPopConns(), done,
		func(ctx context.Context, _ int, rec *recorder) error {
			return sub.consumeOnce(ctx, queue, "", rec)
		})
	res.Params = fmt.Sprintf("batch=%d conns=%d partitions=%d messages=%d payload=%dB", batch, r.sweepPopConns(), partitions, total, r.cfg.PayloadBytes)
	return res, register, nil
}
