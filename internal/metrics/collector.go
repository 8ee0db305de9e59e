// Package metrics keeps this instance's counters (docs/api/admin-api.md §11, docs/api/operations.md §5): the
// broker and the background jobs report each operation to a Collector, which samples process
// and pool gauges every METRICS_SAMPLE_INTERVAL_MS and flushes per-minute deltas to the
// database every METRICS_AGGREGATE_INTERVAL_S, where every instance's figures meet for the
// cluster-wide families, the status routes and the analytics routes.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// Options configure a Collector.
type Options struct {
	WorkerID       string        // WORKER_ID
	Store          *store.Store  // where minutes are flushed and cluster figures read; nil: neither
	Hub            *waiter.Hub   // parked pops; nil: none
	SampleInterval time.Duration // METRICS_SAMPLE_INTERVAL_MS, default 1 s
	FlushInterval  time.Duration // METRICS_AGGREGATE_INTERVAL_S, default 60 s
	Log            *slog.Logger
	// Maintenance reports the maintenance modes as this instance knows them, for their gauges;
	// nil: both off.
	Maintenance func() (push, pop bool)
	// ConsumerCalls reports the consumer side's database calls and the requests they carried,
	// per kind (pop, ack, transaction), for queen_consumer_db_calls_total and
	// queen_consumer_db_call_requests_total; nil: none.
	ConsumerCalls func() []CallCount
	// Compactions reports the hot sets' rewrites under a held snapshot horizon, for
	// queen_hot_set_compactions_total (docs/design.md, "Steady under a pinned horizon"); nil: none.
	Compactions func() []Compactions
	// XminWarn is XMIN_WARN_SECONDS: the age of the oldest snapshot on the database past which
	// the instance logs a warning and queen_db_oldest_xmin_warning is 1 (horizon.go);
	// 0: DefaultXminWarn.
	XminWarn time.Duration
}

// CallCount is how many database calls one kind of consumer request made and how many requests
// those calls carried: their ratio is the mean merged per call (docs/design.md, "Group commit
// for consumers").
type CallCount struct {
	Kind            string
	Calls, Requests int64
}

// Compactions is how often this instance rewrote one hot set, and how many of its attempts
// found the tables' locks taken and left them as they were.
type Compactions struct {
	Set                string
	Compacted, Skipped int64
}

// Collector counts what this instance does. It implements broker.Recorder and
// maintenance.Recorder; it is safe for concurrent use. Its sampling and flushing is a lifecycle
// part (Start, Stop).
type Collector struct {
	lifecycle.StartStop
	lifecycle.Base

	opts     Options
	instance store.Instance
	started  time.Time
	// fileBuf reports the spool's figures (SetFileBuffer): set after the collector is built,
	// because the spool's drainer needs the broker, which records into the collector.
	fileBuf atomic.Pointer[fileBufferFunc]

	mu       sync.Mutex
	requests int64 // HTTP requests since start
	written  int64 // messages written since start
	minutes  map[time.Time]*minute
	// unflushed holds batches of minutes whose flush failed, oldest first; flushMu keeps two
	// flushes from writing the same batch.
	unflushed []map[time.Time]*minute
	flushMu   sync.Mutex
	rates     []rateSample // the last minute of samples, oldest first
	hist      histograms   // latency histograms served by Handler (prometheus.go)
	lastCPU   cpuTimes
	horizon   horizonWatch // the XMIN_WARN_SECONDS warning's state (horizon.go)
}

// minute holds the deltas of one minute not yet flushed.
type minute struct {
	w      store.WorkerMinute
	queues map[queueKey]*store.QueueMinute
}

// queueKey names a queue among every tenant's: two tenants may each have a queue of one name.
type queueKey struct{ tenant, queue string }

type rateSample struct {
	at                time.Time
	requests, written int64
}

var _ broker.Recorder = (*Collector)(nil)

// New returns a collector; Start starts its sampling and flushing.
func New(o Options) *Collector {
	if o.SampleInterval <= 0 {
		o.SampleInterval = time.Second
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.XminWarn <= 0 {
		o.XminWarn = DefaultXminWarn
	}
	now := time.Now
	if o.Store != nil {
		now = o.Store.Now // minute buckets follow the clock the database work uses
	}
	host, _ := os.Hostname()
	c := &Collector{Base: lifecycle.NewBase("metrics", o.Log, now), opts: o, started: time.Now(),
		minutes: map[time.Time]*minute{}, hist: newHistograms(),
		instance: store.Instance{WorkerID: o.WorkerID, Hostname: host, PID: os.Getpid()}}
	c.lastCPU = processCPU()
	return c
}

// current returns the deltas of the running minute; c.mu must be held.
func (c *Collector) current() *minute {
	at := c.Now().UTC().Truncate(time.Minute)
	m := c.minutes[at]
	if m == nil {
		m = &minute{w: store.WorkerMinute{Minute: at}, queues: map[queueKey]*store.QueueMinute{}}
		c.minutes[at] = m
	}
	return m
}

// op counts one broker operation: its request, its latency and a database failure.
func (m *minute) op(requests *int64, msSum, msMax *float64, hist *mq.LatencyHist, took time.Duration, err error) {
	*requests++
	ms := float64(took) / float64(time.Millisecond)
	hist.Observe(ms)
	*msSum += ms
	*msMax = max(*msMax, ms)
	if err != nil && !errors.Is(err, context.Canceled) { // a caller that went away is no failure
		m.w.DBErrors++
	}
}

// queue returns the deltas of tenant's queue name in the minute.
func (m *minute) queue(tenant, name string) *store.QueueMinute {
	k := queueKey{tenant, name}
	q := m.queues[k]
	if q == nil {
		q = &store.QueueMinute{Minute: m.w.Minute, Tenant: tenant, Queue: name}
		m.queues[k] = q
	}
	return q
}

// Request counts one HTTP request.
func (c *Collector) Request() {
	c.mu.Lock()
	c.requests++
	c.current().w.Requests++
	c.mu.Unlock()
}

// Pushed implements broker.Recorder.
func (c *Collector) Pushed(tenant string, items []mq.PushItem, out []mq.PushResult, took time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.op(&m.w.PushRequests, &m.w.PushMsSum, &m.w.PushMsMax, &m.w.PushMsHist, took, err)
	seen := map[string]bool{}
	for _, it := range items {
		if !seen[it.Queue] {
			seen[it.Queue] = true
			m.queue(tenant, it.Queue).PushRequests++
		}
	}
	for _, o := range out {
		if o.Status == mq.StatusQueued {
			c.written++
			m.w.PushMessages++
			m.queue(tenant, o.Queue).PushMessages++
		}
	}
}

// Popped implements broker.Recorder. Auto-acked deliveries also count as acknowledged.
func (c *Collector) Popped(tenant string, req mq.PopRequest, res mq.PopResult, took time.Duration, err error) {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.op(&m.w.PopRequests, &m.w.PopMsSum, &m.w.PopMsMax, &m.w.PopMsHist, took, err)
	if len(res.Messages) == 0 {
		m.w.PopEmpty++
		if req.Queue != "" {
			q := m.queue(tenant, req.Queue)
			q.PopRequests++
			q.PopEmpty++
		}
		return
	}
	seen := map[string]bool{}
	for _, msg := range res.Messages {
		q := m.queue(tenant, msg.Queue)
		if !seen[msg.Queue] {
			seen[msg.Queue] = true
			q.PopRequests++
		}
		q.PopMessages++
		m.w.PopMessages++
		c.hist.delivery.Observe(max(now.Sub(msg.CreatedAt), 0).Seconds())
		lag := float64(max(now.Sub(msg.CreatedAt), 0)) / float64(time.Millisecond)
		q.LagMsSum += lag
		q.LagCount++
		q.LagMsMax = max(q.LagMsMax, lag)
		m.w.LagMsSum += lag
		m.w.LagCount++
		m.w.LagMsMax = max(m.w.LagMsMax, lag)
		if req.AutoAck {
			q.AckMessages++
			q.AckSuccess++
			m.w.AckMessages++
			m.w.AckSuccess++
		}
	}
}

// Acked implements broker.Recorder: an item succeeds when it was accepted with status
// completed; every other item (rejected, failed, retry, dlq) counts as failed.
func (c *Collector) Acked(tenant string, items []mq.AckItem, res []mq.AckResult, took time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.op(&m.w.AckRequests, &m.w.AckMsSum, &m.w.AckMsMax, &m.w.AckMsHist, took, err)
	seen := map[string]bool{}
	for i, r := range res {
		queue := ""
		if r.Queue != nil {
			queue = *r.Queue
		}
		ok := r.Success && i < len(items) && items[i].Status == mq.AckCompleted
		c.ackItem(m, tenant, queue, ok, r.DLQ, seen)
	}
}

// ackItem counts one acknowledged message; queue "" is counted only for the instance.
func (c *Collector) ackItem(m *minute, tenant, queue string, ok, dlq bool, seen map[string]bool) {
	m.w.AckMessages++
	if ok {
		m.w.AckSuccess++
	} else {
		m.w.AckFailed++
	}
	if dlq {
		m.w.DLQ++
	}
	if queue == "" {
		return
	}
	q := m.queue(tenant, queue)
	if !seen[queue] {
		seen[queue] = true
		q.AckRequests++
	}
	q.AckMessages++
	if ok {
		q.AckSuccess++
	} else {
		q.AckFailed++
	}
	if dlq {
		q.DLQ++
	}
}

// Transacted implements broker.Recorder. A rolled-back transaction counts as a transaction
// of the queues it pushed to and nothing else.
func (c *Collector) Transacted(tenant string, entries []mq.TxnEntry, out mq.TxnOutcome, took time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.op(&m.w.Transactions, &m.w.TxnMsSum, &m.w.TxnMsMax, &m.w.TxnMsHist, took, err)
	touched := map[string]bool{}
	for _, e := range entries {
		if e.Ack == nil {
			touched[e.Push.Queue] = true
		}
	}
	acks := map[string]bool{}
	for _, r := range out.Results {
		touched[r.Queue] = true
		if r.Kind != "ack" {
			if !r.Duplicate {
				c.written++
				m.w.PushMessages++
				m.queue(tenant, r.Queue).PushMessages++
			}
			continue
		}
		ok := r.Index < len(entries) && entries[r.Index].Ack != nil && entries[r.Index].Ack.Status == mq.AckCompleted
		c.ackItem(m, tenant, r.Queue, ok, r.DLQ, acks)
	}
	for q := range touched {
		m.queue(tenant, q).Transactions++
	}
}

// Cycled implements broker.Recorder: a stream cycle (docs/api/streams.md §4) counts as a push
// request when it carries push items and as an ack request when it carries an ack (its time
// in both; a database failure once). Its queued sink items count as pushed messages; its ack
// as one acknowledged message of the source queue, failed when the cycle rolled back or the
// ack dead-lettered, as a rejected or dlq ack item counts.
func (c *Collector) Cycled(tenant string, cy mq.StreamCycle, out mq.StreamCycleOutcome, took time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	opErr := err
	if len(cy.PushItems) > 0 {
		m.op(&m.w.PushRequests, &m.w.PushMsSum, &m.w.PushMsMax, &m.w.PushMsHist, took, opErr)
		opErr = nil
		seen := map[string]bool{}
		for _, e := range cy.PushItems {
			if !seen[e.Push.Queue] {
				seen[e.Push.Queue] = true
				m.queue(tenant, e.Push.Queue).PushRequests++
			}
		}
		for _, r := range out.PushResults {
			if r.Status == mq.StatusQueued {
				c.written++
				m.w.PushMessages++
				m.queue(tenant, r.Queue).PushMessages++
			}
		}
	}
	if cy.Ack != nil {
		m.op(&m.w.AckRequests, &m.w.AckMsSum, &m.w.AckMsMax, &m.w.AckMsHist, took, opErr)
		applied := err == nil && out.Rollback == "" && out.Ack != nil
		c.ackItem(m, tenant, out.SourceQueue, applied && !cy.Ack.DeadLetter, applied && out.Ack.DLQ, map[string]bool{})
	}
}

// DeadLettered counts DLQ entries written by a background job (eviction) in tenant's queue.
func (c *Collector) DeadLettered(tenant, queue string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.current()
	m.w.DLQ += n
	m.queue(tenant, queue).DLQ += n
}

// LeasesExpired counts leases lease housekeeping found expired.
func (c *Collector) LeasesExpired(n int64) {
	c.mu.Lock()
	c.current().w.LeasesExpired += n
	c.mu.Unlock()
}
