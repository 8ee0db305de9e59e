package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Scenarios lists the scenario names Run accepts.
var Scenarios = []string{"push", "popack", "txn", "fanout", "partitions", "e2e", "spool", "streams-cycle", "streams-window", "heldxmin", "sweep", "steady"}

// Run executes one scenario and its same-run baseline.
func Run(ctx context.Context, scenario string, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	api, err := newAPIClient(cfg.Server, max(cfg.Conns, cfg.Groups*cfg.Conns, cfg.Producers+cfg.Consumers, cfg.Producers+cfg.Groups*cfg.Consumers, 8))
	if err != nil {
		return Result{}, err
	}
	r := &runner{cfg: cfg, api: api, queue: fmt.Sprintf("bench-%s-%d", scenario, time.Now().UnixNano())}
	var res Result
	var baseline string
	switch scenario {
	case "push":
		res, err = r.pushAs(ctx, "push", "")
		baseline = BaselineBatch
		if cfg.Batch < 100 {
			baseline = BaselineSingle
		}
	case "popack":
		res, err = r.popAck(ctx, cfg.Partitions, cfg.Messages)
		// Batches compare with reading 100 rows per transaction; single messages, where every
		// pop and ack is a commit, with single-row commits.
		baseline = BaselineCursor
		if cfg.Batch < 100 {
			baseline = BaselineSingle
		}
	case "txn":
		res, err = r.txn(ctx)
		baseline = BaselineSingle
	case "fanout":
		res, err = r.fanout(ctx)
		baseline = BaselineCursor
	case "partitions":
		return r.partitions(ctx)
	case "e2e":
		return r.e2e(ctx)
	case "spool":
		// PostgreSQL is away (or push maintenance is on): there is no database to measure a
		// baseline on; compare with the push scenario against a broker whose database is up.
		return r.pushAs(ctx, "spool", "buffered")
	case "streams-cycle":
		return r.streamsCycle(ctx)
	case "streams-window":
		return r.streamsWindow(ctx)
	case "heldxmin":
		return r.heldXmin(ctx)
	case "sweep":
		return r.sweep(ctx)
	case "steady":
		return r.steady(ctx)
	default:
		return Result{}, fmt.Errorf("unknown scenario %q (one of %v)", scenario, Scenarios)
	}
	if err != nil || cfg.DSN == "" {
		return res, err
	}
	bl, err := openBaselines(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer bl.close()
	b, err := bl.run(ctx, baseline)
	if err != nil {
		return res, err
	}
	res.Baseline, res.Ratio = b, res.MsgsPerSec/b.RowsPerSec
	return res, nil
}

type runner struct {
	cfg   Config
	api   *apiClient
	queue string
}

// measure runs work on n goroutines until the duration passes or done reports true, with a
// live progress line, and returns the recording with the CPU spent per side and the broker's
// peak RSS.
func (r *runner) measure(ctx context.Context, name string, n int, done func(*recorder) bool,
	work func(ctx context.Context, worker int, rec *recorder) error) Result {
	rec := &recorder{}
	sampler := startSampler(ctx, r.cfg.PID)
	calls0 := r.api.callCounts(ctx)
	cpu0 := takeCPU(r.cfg.PID)
	// The window starts after the CPU snapshot (reading /proc for every PostgreSQL process
	// takes a while on a loaded machine). Workers stop starting requests when it ends and let
	// the ones in flight finish: cancelling them would count their work nowhere, and on a slow
	// machine a short window could end before any request did (a run of 0 messages). ctx
	// still bounds everything.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration+time.Minute)
	defer cancel()
	start := time.Now()
	stopAt := start.Add(r.cfg.Duration)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) && ctx.Err() == nil && (done == nil || !done(rec)) {
				if err := work(ctx, w, rec); err != nil && ctx.Err() == nil {
					rec.fail()
				}
			}
		}()
	}
	stopProgress := r.progress(name, rec, start)
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := takeCPU(r.cfg.PID)
	calls1 := r.api.callCounts(ctx)
	stopProgress()
	res := rec.result(name, r.cfg.params(), elapsed)
	res.CPU = cpu1.costSince(cpu0, float64(res.Messages))
	res.CPUSeconds, res.PeakRSSBytes = cpu1.broker-cpu0.broker, sampler.finish()
	res.RequestsPerCall = perCall(calls0, calls1)
	return res
}

// progress prints a live rate line until the returned stop is called.
func (r *runner) progress(name string, rec *recorder, start time.Time) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprint(r.cfg.Progress, "\r\033[K")
				return
			case <-t.C:
				n := rec.count()
				fmt.Fprintf(r.cfg.Progress, "\r\033[K%s: %d msgs, %.0f msgs/s, %s", name, n,
					float64(n)/time.Since(start).Seconds(), time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}
