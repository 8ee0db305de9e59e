package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Status routes (docs/api/admin-api.md §5, §8). Counters come from the stats job's tables, rates from
// the per-minute metrics every instance flushes; statsAge says how old the counters are.

// registerStatus adds the status, analytics, stats-refresh and metrics routes and counts
// every routed request for the metrics.
func (s *Server) registerStatus(r *Router) {
	r.Use(s.countRequests)
	r.Handle(http.MethodGet, "/api/v1/status", LevelReadOnly, s.status)
	r.Handle(http.MethodGet, "/api/v1/status/queues", LevelReadOnly, s.statusQueues)
	r.Handle(http.MethodGet, "/api/v1/status/queues/:queue", LevelReadOnly, s.statusQueue)
	r.Handle(http.MethodGet, "/api/v1/status/queues/:queue/messages", LevelReadOnly, s.statusQueueMessages)
	r.Handle(http.MethodGet, "/api/v1/status/analytics", LevelReadOnly, s.statusAnalytics)
	r.Handle(http.MethodGet, "/api/v1/status/buffers", LevelReadOnly, s.statusBuffers)
	r.Handle(http.MethodPost, "/api/v1/stats/refresh", LevelAdmin, s.refreshStats)
	s.registerAnalytics(r)
	r.Handle(http.MethodGet, "/metrics", LevelPublic, s.metricsJSON)
	r.Handle(http.MethodGet, "/metrics/prometheus", LevelPublic, func(w http.ResponseWriter, r *http.Request) {
		s.cfg.Metrics.Handler().ServeHTTP(w, r)
	})
}

// window reads from and to (docs/api/README.md §2.3), defaulting to the def before now; it answers 400
// itself when one does not parse.
func (s *Server) window(w http.ResponseWriter, q url.Values, def time.Duration) (from, to time.Time, ok bool) {
	f, t, msg := timeRange(q)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return from, to, false
	}
	to = s.read.Now()
	if t != nil {
		to = *t
	}
	from = to.Add(-def)
	if f != nil {
		from = *f
	}
	// Bounded windows keep every series at 1,440 points or fewer: a window of years in small
	// buckets asked the database for millions of rows (docs/api/admin-api.md §5.1, docs/api/README.md §2.9).
	switch {
	case from.After(to):
		writeError(w, http.StatusBadRequest, "Invalid time range")
		return from, to, false
	case to.Sub(from) > mq.MaxWindow:
		writeError(w, http.StatusBadRequest, "Time window too large")
		return from, to, false
	}
	return from, to, true
}

// seriesWindow reads the window of a time series (default: def before now) and plans its
// buckets (docs/api/admin-api.md §5.1); it answers a bad or too wide window itself.
func (s *Server) seriesWindow(w http.ResponseWriter, q url.Values, def time.Duration) (mq.Window, bool) {
	from, to, ok := s.window(w, q, def)
	if !ok {
		return mq.Window{}, false
	}
	win, err := mq.SeriesWindow(from, to)
	if err != nil {
		windowError(w, err)
		return mq.Window{}, false
	}
	return win, true
}

// windowError answers a window the bounds refuse; it reports whether err was one.
func windowError(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, mq.ErrInvalidTimeRange):
		writeError(w, http.StatusBadRequest, "Invalid time range")
	case errors.Is(err, mq.ErrWindowTooLarge):
		writeError(w, http.StatusBadRequest, "Time window too large")
	default:
		return false
	}
	return true
}

// queueFilter reads the queue, namespace and task filters; n notes a name holding U+0000.
func queueFilter(q url.Values, n *nameArgs) mq.QueueFilter {
	return mq.QueueFilter{Queue: n.query(q, "queue"), Namespace: n.query(q, "namespace"),
		Task: n.query(q, "task")}
}

// nothingFilter matches no queue: no queue name is longer than 255 characters, since every
// route that creates a queue refuses longer names. A filter naming a queue, namespace or task
// that holds U+0000 is answered with it, so the overview keeps the shape (buckets, workers) an
// unknown queue name gets.
var nothingFilter = mq.QueueFilter{Queue: strings.Repeat("-", maxNameChars+1)}

type throughputJSON struct {
	Timestamp          msTime  `json:"timestamp"`
	Ingested           int64   `json:"ingested"`
	Processed          int64   `json:"processed"`
	PopMessages        int64   `json:"popMessages"`
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
	PopPerSecond       float64 `json:"popPerSecond"`
	AvgLagMs           float64 `json:"avgLagMs"`
	MaxLagMs           float64 `json:"maxLagMs"`
	AvgEventLoopLagMs  float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs  float64 `json:"maxEventLoopLagMs"`
	MinFreeSlots       float64 `json:"minFreeSlots"`
	DBErrors           int64   `json:"dbErrors"`
	AckFailed          int64   `json:"ackFailed"`
	DLQCount           int64   `json:"dlqCount"`
	QueenCPUUserPct    float64 `json:"queenCpuUserPct"`
	QueenCPUSysPct     float64 `json:"queenCpuSysPct"`
	QueenRSSMb         float64 `json:"queenRssMb"`
	DBPoolActive       float64 `json:"dbPoolActive"`
	DBPoolIdle         float64 `json:"dbPoolIdle"`
	DBPoolSize         float64 `json:"dbPoolSize"`
}

type opCounts struct {
	Push float64 `json:"push"`
	Pop  float64 `json:"pop"`
	Ack  float64 `json:"ack"`
}

type statusJSON struct {
	TimeRange struct {
		From msTime `json:"from"`
		To   msTime `json:"to"`
	} `json:"timeRange"`
	BucketMinutes int              `json:"bucketMinutes"`
	PointCount    int              `json:"pointCount"`
	Throughput    []throughputJSON `json:"throughput"`
	Queues        []statusQueueRef `json:"queues"`
	Messages      struct {
		countersJSON
		Requests        opCounts `json:"requests"`
		BatchEfficiency opCounts `json:"batchEfficiency"`
	} `json:"messages"`
	Leases struct {
		Active               int64 `json:"active"`
		PartitionsWithLeases int64 `json:"partitionsWithLeases"`
		TotalBatchSize       int64 `json:"totalBatchSize"`
		TotalAcked           int64 `json:"totalAcked"`
	} `json:"leases"`
	DeadLetterQueue struct {
		TotalMessages      int64            `json:"totalMessages"`
		AffectedPartitions int64            `json:"affectedPartitions"`
		TopErrors          []errorCountJSON `json:"topErrors"`
	} `json:"deadLetterQueue"`
	Workers []workerJSON `json:"workers"`
	Errors  struct {
		DBErrors    int64 `json:"dbErrors"`
		AckFailed   int64 `json:"ackFailed"`
		DLQMessages int64 `json:"dlqMessages"`
	} `json:"errors"`
	StatsAge *int64 `json:"statsAge"`
}

type statusQueueRef struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	Partitions    int64  `json:"partitions"`
	TotalConsumed int64  `json:"totalConsumed"`
}

type errorCountJSON struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
}

type workerJSON struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
	PID      int    `json:"pid"`
	LastSeen msTime `json:"lastSeen"`
}

// status serves GET /api/v1/status (docs/api/admin-api.md §5.1).
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	win, ok := s.seriesWindow(w, q, time.Hour)
	if !ok {
		return
	}
	bucket := win.BucketMinutes
	var n nameArgs
	f := queueFilter(q, &n)
	if n.nul {
		f = nothingFilter
	}
	o, err := s.read.StatusOverview(r.Context(), f, win)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var out statusJSON
	out.TimeRange.From, out.TimeRange.To = msTime(win.From), msTime(win.To)
	out.BucketMinutes, out.PointCount = bucket, len(o.Throughput)
	secs := float64(bucket * 60)
	out.Throughput = make([]throughputJSON, len(o.Throughput))
	for i, p := range o.Throughput {
		out.Throughput[i] = throughputJSON{Timestamp: msTime(p.At), Ingested: p.Ingested, Processed: p.Processed,
			PopMessages: p.Popped, IngestedPerSecond: float64(p.Ingested) / secs,
			ProcessedPerSecond: float64(p.Processed) / secs, PopPerSecond: float64(p.Popped) / secs,
			AvgLagMs: p.AvgLagMs, MaxLagMs: p.MaxLagMs, DBErrors: p.DBErrors, AckFailed: p.AckFailed, DLQCount: p.DLQ,
			QueenCPUUserPct: p.CPUUserPct, QueenCPUSysPct: p.CPUSysPct, QueenRSSMb: float64(p.RSSBytes) / (1 << 20),
			DBPoolActive: p.PoolActive, DBPoolIdle: p.PoolIdle, DBPoolSize: p.PoolSize}
	}
	out.Queues = make([]statusQueueRef, len(o.Queues))
	for i, qr := range o.Queues {
		out.Queues[i] = statusQueueRef{ID: qr.ID, Name: qr.Name, Namespace: qr.Namespace, Task: qr.Task,
			Partitions: qr.Partitions, TotalConsumed: qr.Consumed}
	}
	wt := o.Window
	out.Messages.countersJSON = counters(o.Counters)
	out.Messages.Requests = opCounts{float64(wt.PushRequests), float64(wt.PopRequests), float64(wt.AckRequests)}
	out.Messages.BatchEfficiency = opCounts{perRequest(wt.PushMessages, wt.PushRequests),
		perRequest(wt.PopMessages, wt.PopRequests), perRequest(wt.AckMessages, wt.AckRequests)}
	out.Leases.Active, out.Leases.PartitionsWithLeases = o.ActiveLeases, o.LeasedPartitions
	out.Leases.TotalBatchSize, out.Leases.TotalAcked = o.LeasedMessages, wt.AckSuccess
	out.DeadLetterQueue.TotalMessages, out.DeadLetterQueue.AffectedPartitions = o.Counters.DeadLetter, o.DLQPartitions
	out.DeadLetterQueue.TopErrors = make([]errorCountJSON, len(o.TopErrors))
	for i, e := range o.TopErrors {
		out.DeadLetterQueue.TopErrors[i] = errorCountJSON(e)
	}
	out.Workers = make([]workerJSON, len(o.Workers))
	for i, wk := range o.Workers {
		out.Workers[i] = workerJSON{Hostname: wk.Hostname, WorkerID: wk.WorkerID, PID: wk.PID, LastSeen: msTime(wk.LastSeen)}
	}
	out.Errors.DBErrors, out.Errors.AckFailed, out.Errors.DLQMessages = wt.DBErrors, wt.AckFailed, wt.DLQ
	out.StatsAge = s.statsAge(o.StatsAt)
	writeJSON(w, http.StatusOK, out)
}

// statsAge is how many whole seconds old the stats are; nil before the stats job first ran.
func (s *Server) statsAge(at *time.Time) *int64 {
	if at == nil {
		return nil
	}
	age := max(int64(s.read.Now().Sub(*at)/time.Second), 0)
	return &age
}

func perRequest(messages, requests int64) float64 {
	if requests == 0 {
		return 0
	}
	return float64(messages) / float64(requests)
}

// statusQueues serves GET /api/v1/status/queues: the queue listing, by name, 100 a page.
func (s *Server) statusQueues(w http.ResponseWriter, r *http.Request) {
	s.queueListing(w, r, "name", defaultStatusQueueLimit)
}

// queueSummaries renders queues as the resource and status listings show them.
func queueSummaries(qs []mq.QueueSummary) []queueSummaryJSON {
	out := make([]queueSummaryJSON, len(qs))
	for i, q := range qs {
		o := &out[i]
		o.ID, o.Name, o.Namespace, o.Task, o.CreatedAt, o.Partitions = q.ID, q.Name, q.Namespace, q.Task, msTime(q.CreatedAt), q.Partitions
		o.Messages.Total, o.Messages.Pending, o.Messages.Processing = q.Total, q.Pending, q.Processing
		o.DeadLetter, o.MaxTimeLag, o.Tenant = q.DeadLetter, q.MaxTimeLag, q.Tenant
	}
	return out
}

type statusPartitionJSON struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	CreatedAt msTime       `json:"createdAt"`
	Messages  countersJSON `json:"messages"`
	Stats     struct {
		ConsumerGroups int `json:"consumerGroups"`
		ActiveLeases   int `json:"activeLeases"`
	} `json:"stats"`
	Cursor struct {
		TotalConsumed   int64 `json:"totalConsumed"`
		BatchesConsumed int64 `json:"batchesConsumed"`
	} `json:"cursor"`
	LastActivity  msTime `json:"lastActivity"`
	OldestMessage msTime `json:"oldestMessage"`
	NewestMessage msTime `json:"newestMessage"`
	MaxTimeLag    int64  `json:"maxTimeLag"`
}

type statusQueueJSON struct {
	Queue struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Task      string `json:"task"`
		Priority  int    `json:"priority"`
		CreatedAt msTime `json:"createdAt"`
		Config    struct {
			LeaseTime       int  `json:"leaseTime"`
			RetryLimit      int  `json:"retryLimit"`
			RetryDelay      int  `json:"retryDelay"`
			TTL             int  `json:"ttl"`
			MaxQueueSize    int  `json:"maxQueueSize"`
			DeadLetterQueue bool `json:"deadLetterQueue"`
		} `json:"config"`
	} `json:"queue"`
	Partitions []statusPartitionJSON `json:"partitions"`
	// PartitionCount counts the partitions matching search; Partitions is one page of them.
	PartitionCount int64    `json:"partitionCount"`
	Pagination     pageJSON `json:"pagination"`
	Totals         struct {
		Messages countersJSON `json:"messages"`
		countersJSON
	} `json:"totals"`
}

// statusQueue serves GET /api/v1/status/queues/:queue (dashboard M7); includePartitions is
// ignored.
func (s *Server) statusQueue(w http.ResponseWriter, r *http.Request) {
	f, msg := partitionPage(r.URL.Query())
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	page := f.Page
	q, found, err := s.queueWithPartitions(r, f)
	if !s.queueFound(w, r, found, err) {
		return
	}
	var out statusQueueJSON
	out.PartitionCount, out.Pagination = q.PartitionCount, pagination(page)
	oq := &out.Queue
	oq.ID, oq.Name, oq.Namespace, oq.Task, oq.Priority, oq.CreatedAt = q.ID, q.Name, q.Namespace, q.Task, q.Priority, msTime(q.CreatedAt)
	oq.Config.LeaseTime, oq.Config.RetryLimit, oq.Config.RetryDelay = q.LeaseTime, q.RetryLimit, q.RetryDelay
	oq.Config.TTL, oq.Config.MaxQueueSize, oq.Config.DeadLetterQueue = q.TTL, q.MaxSize, q.DeadLetterQueue
	out.Partitions = make([]statusPartitionJSON, len(q.Partitions))
	for i, p := range q.Partitions {
		o := &out.Partitions[i]
		o.ID, o.Name, o.CreatedAt, o.Messages = p.ID, p.Name, msTime(p.CreatedAt), counters(p.Counters)
		o.Stats.ConsumerGroups, o.Stats.ActiveLeases = p.ConsumerGroups, p.ActiveLeases
		o.Cursor.TotalConsumed, o.Cursor.BatchesConsumed = p.Consumed, p.Batches
		o.LastActivity, o.OldestMessage, o.NewestMessage = msOpt(p.LastActivity), msOpt(p.Oldest), msOpt(p.Newest)
		o.MaxTimeLag = p.MaxTimeLag
	}
	out.Totals.Messages = counters(q.Totals)
	out.Totals.countersJSON = out.Totals.Messages
	writeJSON(w, http.StatusOK, out)
}

// queueFound answers a failed read of one queue (503/500, or 404 for an unknown queue) and
// reports whether the handler may go on.
func (s *Server) queueFound(w http.ResponseWriter, r *http.Request, found bool, err error) bool {
	switch {
	case err != nil:
		s.fail(w, r, err)
	case !found:
		writeError(w, http.StatusNotFound, "Queue not found")
	default:
		return true
	}
	return false
}

type statusMessageJSON struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	QueuePath     string `json:"queuePath"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Status        string `json:"status"`
	CreatedAt     msTime `json:"createdAt"`
}

// statusQueueMessages serves GET /api/v1/status/queues/:queue/messages.
func (s *Server) statusQueueMessages(w http.ResponseWriter, r *http.Request) {
	page := listPage(r.URL.Query(), 50)
	var n nameArgs
	queue := n.path(r, "queue")
	var msgs []mq.QueueMessage
	var found bool
	var err error
	if !n.nul {
		msgs, found, err = s.read.StatusQueueMessages(r.Context(), queue, page.Limit, page.Offset)
	}
	if !s.queueFound(w, r, found, err) {
		return
	}
	out := make([]statusMessageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = statusMessageJSON{ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			QueuePath: m.Queue + "/" + m.Partition, Queue: m.Queue, Partition: m.Partition, Status: m.Status,
			CreatedAt: msTime(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
}

// statusAnalytics serves GET /api/v1/status/analytics: messages written per bucket.
func (s *Server) statusAnalytics(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	interval, given := queryString(q, "interval")
	if !given {
		interval = "hour"
	}
	if interval != "minute" && interval != "hour" && interval != "day" {
		writeError(w, http.StatusBadRequest, "Invalid interval")
		return
	}
	from, to, ok := s.window(w, q, 24*time.Hour)
	if !ok {
		return
	}
	// A window holding more than 1,440 buckets of the interval asked is answered in the next
	// coarser one that fits (docs/api/admin-api.md §5.2); "interval" says which.
	interval, start, err := mq.IntervalWindow(from, to, interval)
	if err != nil {
		windowError(w, err)
		return
	}
	var n nameArgs
	f := queueFilter(q, &n)
	var points []mq.CountPoint
	if !n.nul {
		points, err = s.read.MessagesWritten(r.Context(), f, interval, start, to)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	type point struct {
		Timestamp msTime `json:"timestamp"`
		Messages  int64  `json:"messages"`
	}
	out := make([]point, len(points))
	for i, p := range points {
		out[i] = point{msTime(p.At), p.N}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dataPoints": out, "interval": interval,
		"from": msTime(from), "to": msTime(to)})
}

// statusBuffers serves GET /api/v1/status/buffers: this instance's spool figures. It answers
// without the database (docs/api/admin-api.md §5, operations.md §4.3: "last known values"):
// dbHealthy is what this instance's database calls last found (a call reached it and none
// found it unavailable since), read from memory, so the route answers at once while the
// database is frozen instead of waiting DB_CONNECTION_TIMEOUT for a ping. Without
// Diagnostics (a server built by hand) it pings.
func (s *Server) statusBuffers(w http.ResponseWriter, r *http.Request) {
	fb := s.fileBuffer()
	var healthy bool
	if s.cfg.Database != nil {
		d := s.cfg.Database.DatabaseDetail()
		healthy = d.LastOK != nil && d.UnavailableSince == nil
	} else {
		err := s.data.Ping(r.Context())
		healthy = err == nil || errors.Is(err, mq.ErrBusy)
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": fb.Pending, "failed": fb.Failed,
		"dbHealthy": healthy, "worker": s.cfg.WorkerID})
}

// refreshStats serves POST /api/v1/stats/refresh (docs/api/admin-api.md §8): this instance's metrics
// are flushed, then the counters recomputed, unless another run holds the stats lock.
func (s *Server) refreshStats(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Jobs == nil {
		writeError(w, http.StatusServiceUnavailable, "Stats job not available")
		return
	}
	if err := s.cfg.Metrics.Flush(r.Context()); err != nil {
		s.log.Warn("flushing metrics before a stats refresh", "err", err)
	}
	res, ran, err := s.cfg.Jobs.RefreshStats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ran {
		writeJSON(w, http.StatusOK, map[string]any{"skipped": true, "reason": "another_instance_running"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"partition": res.Partition, "queue": res.Queue,
		"namespace": res.Namespace, "task": res.Task, "system": res.System, "cleanup": res.Cleanup})
}
