package metrics

import (
	"context"
	"runtime"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// cpuTimes is cumulative CPU time in microseconds.
type cpuTimes struct{ user, sys int64 }

// Start samples every SampleInterval and flushes every FlushInterval, on a goroutine of the
// collector's own, until Stop. Counting works whether or not it runs: tests that flush by hand
// never start it.
func (c *Collector) Start(ctx context.Context) error {
	return c.StartWith(ctx, func(context.Context) error {
		c.Go(c.run)
		return nil
	})
}

// Stop ends the sampling and returns after a last flush (bounded by 5 s), so a clean shutdown
// loses nothing; call it while the store is still open.
func (c *Collector) Stop() { c.StartStop.Stop() }

func (c *Collector) run(ctx context.Context) {
	sample := time.NewTicker(c.opts.SampleInterval)
	flush := time.NewTicker(c.opts.FlushInterval)
	horizon := time.NewTicker(horizonCheckInterval)
	defer sample.Stop()
	defer flush.Stop()
	defer horizon.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			c.flushLogged(fctx)
			cancel()
			return
		case <-sample.C:
			c.Sample()
		case <-flush.C:
			c.flushLogged(ctx)
		case <-horizon.C:
			c.CheckHorizon(ctx)
		}
	}
}

func (c *Collector) flushLogged(ctx context.Context) {
	if err := c.Flush(ctx); err != nil {
		c.opts.Log.Warn("flushing metrics failed; keeping them for the next flush", "err", err)
	}
}

// Sample records the gauges of the running minute (CPU used since the last sample, memory,
// pool, parked pops) and a point for the per-second rates of GET /metrics.
func (c *Collector) Sample() {
	cpu := processCPU()
	rss, _ := processMemory()
	var pool mq.PoolStats
	if c.opts.Store != nil {
		pool = c.opts.Store.Pool()
	}
	var parked map[waiter.QueueOf]int
	if c.opts.Hub != nil {
		parked = c.opts.Hub.ParkedByQueue()
	}
	now := time.Now()

	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.w.CPUUserUs += cpu.user - c.lastCPU.user
	m.w.CPUSysUs += cpu.sys - c.lastCPU.sys
	c.lastCPU = cpu
	m.w.RSSBytes = max(m.w.RSSBytes, rss)
	m.w.PoolSize = max(m.w.PoolSize, int(pool.Open))
	m.w.PoolActive = max(m.w.PoolActive, int(pool.Acquired))
	m.w.PoolIdle = max(m.w.PoolIdle, int(pool.Idle))
	total := 0
	for q, n := range parked {
		total += n
		if q.Queue != "" {
			qm := m.queue(q.Tenant, q.Queue)
			qm.Parked = max(qm.Parked, n)
		}
	}
	m.w.Parked = max(m.w.Parked, total)

	c.rates = append(c.rates, rateSample{at: now, requests: c.requests, written: c.written})
	for len(c.rates) > 1 && now.Sub(c.rates[0].at) > time.Minute {
		c.rates = c.rates[1:]
	}
}

// Flush writes the minutes recorded since the last flush to the database. A batch that fails
// is kept and written before newer ones on the next flush (separately: each batch holds at most
// one row per minute and queue, which is what one upsert statement can take); at most
// maxUnflushed batches are kept while the database is away, the oldest dropped first.
func (c *Collector) Flush(ctx context.Context) error {
	if c.opts.Store == nil {
		return nil
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	if len(c.minutes) > 0 {
		c.unflushed = append(c.unflushed, c.minutes)
		c.minutes = map[time.Time]*minute{}
	}
	if n := len(c.unflushed) - maxUnflushed; n > 0 {
		c.unflushed = c.unflushed[n:]
		c.opts.Log.Warn("metrics dropped: the database was unreachable for too many flushes", "batches", n)
	}
	pending := c.unflushed
	c.mu.Unlock()
	for _, batch := range pending {
		var workers []store.WorkerMinute
		var queues []store.QueueMinute
		for _, m := range batch {
			workers = append(workers, m.w)
			for _, q := range m.queues {
				queues = append(queues, *q)
			}
		}
		if err := c.opts.Store.FlushMetrics(ctx, c.instance, workers, queues); err != nil {
			return err
		}
		c.mu.Lock()
		c.unflushed = c.unflushed[1:]
		c.mu.Unlock()
	}
	return nil
}

// maxUnflushed bounds the batches kept while flushes fail (an hour at the default interval).
const maxUnflushed = 60

// Snapshot reads this instance's figures without touching the database.
func (c *Collector) Snapshot() mq.InstanceMetrics {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ := processMemory()
	cpu := processCPU()
	s := mq.InstanceMetrics{Uptime: time.Since(c.started), RSS: rss, HeapTotal: int64(ms.HeapSys),
		HeapUsed: int64(ms.HeapAlloc), CPUUserMicros: cpu.user, CPUSysMicros: cpu.sys}
	if c.opts.Store != nil {
		s.Pool = c.opts.Store.Pool()
	}
	if c.opts.Hub != nil {
		s.Parked = c.opts.Hub.Parked()
	}
	now := time.Now()
	c.mu.Lock()
	s.Requests, s.Messages = c.requests, c.written
	// The rate is taken over the last minute of samples; before the sampler has a point that
	// old, over the time since start.
	base := rateSample{at: c.started}
	if len(c.rates) > 0 {
		base = c.rates[0]
	}
	c.mu.Unlock()
	if secs := now.Sub(base.at).Seconds(); secs > 0 {
		s.RequestRate = float64(s.Requests-base.requests) / secs
		s.MessageRate = float64(s.Messages-base.written) / secs
	}
	return s
}
