package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Analytics routes (docs/api/admin-api.md §6): dashboard time series whose shapes are ours; they are
// documented in docs/operations.md. Every route takes from/to (default: the last hour) and
// answers only the buckets that have data, in the bucket size of docs/api/admin-api.md §5.1.

func (s *Server) registerAnalytics(r *Router) {
	const a = "/api/v1/analytics/"
	r.Handle(http.MethodGet, a+"system-metrics", LevelReadOnly, s.analyticsSystem)
	r.Handle(http.MethodGet, a+"worker-metrics", LevelReadOnly, s.analyticsWorkers)
	r.Handle(http.MethodGet, a+"queue-lag", LevelReadOnly, s.analyticsQueueLag)
	r.Handle(http.MethodGet, a+"queue-ops", LevelReadOnly, s.analyticsQueueOps)
	r.Handle(http.MethodGet, a+"queue-parked-replicas", LevelReadOnly, s.analyticsParked)
	r.Handle(http.MethodGet, a+"retention", LevelReadOnly, s.analyticsRetention)
	r.Handle(http.MethodGet, a+"postgres-stats", LevelReadOnly, s.analyticsPostgres)
}

type timeRangeJSON struct {
	From msTime `json:"from"`
	To   msTime `json:"to"`
}

// seriesOf reads the window of an analytics route and the rows read returns for it, answering
// a bad window or a failed read itself (ok false).
func seriesOf[T any](s *Server, w http.ResponseWriter, r *http.Request,
	read func(context.Context, mq.Window, url.Values) ([]T, error)) (rows []T, win mq.Window, ok bool) {
	q := r.URL.Query()
	win, ok = s.seriesWindow(w, q, time.Hour)
	if !ok {
		return nil, win, false
	}
	rows, err := read(r.Context(), win, q)
	if err != nil {
		s.fail(w, r, err)
		return nil, win, false
	}
	return rows, win, true
}

// series answers the window and the series under key, with any extra fields.
func series(w http.ResponseWriter, win mq.Window, key string, v any, extra ...any) {
	out := map[string]any{"timeRange": timeRangeJSON{msTime(win.From), msTime(win.To)},
		"bucketMinutes": win.BucketMinutes, key: v}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i].(string)] = extra[i+1]
	}
	writeJSON(w, http.StatusOK, out)
}

// seriesLimit is the limit of a per-queue route as asked (-1 when absent or malformed); the
// read side applies the default and the bound of docs/api/admin-api.md §6.
func seriesLimit(q url.Values) int { return queryInt(q, "limit", -1) }

// grouped splits rows that arrive ordered by a key into one group per key, in order.
func grouped[T any, K comparable](rows []T, key func(T) K) [][]T {
	var out [][]T
	for i, r := range rows {
		if i == 0 || key(rows[i-1]) != key(r) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

type workerSeriesJSON struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
	PID      int    `json:"pid"`
	Points   []any  `json:"points"`
}

// workerSeries groups per-instance points and renders each with point.
func workerSeries(rows []mq.WorkerPoint, point func(mq.WorkerPoint) any) []workerSeriesJSON {
	out := []workerSeriesJSON{}
	for _, g := range grouped(rows, func(p mq.WorkerPoint) [2]string { return [2]string{p.WorkerID, p.Hostname} }) {
		last := g[len(g)-1]
		sj := workerSeriesJSON{Hostname: last.Hostname, WorkerID: last.WorkerID, PID: last.PID}
		for _, p := range g {
			sj.Points = append(sj.Points, point(p))
		}
		out = append(out, sj)
	}
	return out
}

func (s *Server) workerRows(w http.ResponseWriter, r *http.Request) ([]mq.WorkerPoint, mq.Window, bool) {
	return seriesOf(s, w, r, func(ctx context.Context, win mq.Window, q url.Values) ([]mq.WorkerPoint, error) {
		var n nameArgs
		host, worker := n.query(q, "hostname"), n.query(q, "workerId")
		if n.nul {
			return nil, nil
		}
		return s.read.WorkerSeries(ctx, win, host, worker)
	})
}

// analyticsSystem serves per-instance CPU, memory, pool and request rates.
func (s *Server) analyticsSystem(w http.ResponseWriter, r *http.Request) {
	rows, win, ok := s.workerRows(w, r)
	if !ok {
		return
	}
	series(w, win, "workers", workerSeries(rows, func(p mq.WorkerPoint) any {
		busy := float64(max(p.Minutes, 1)) * 60e6 // CPU microseconds available in the bucket's minutes
		return map[string]any{"timestamp": msTime(p.At), "cpuUserPct": float64(p.CPUUserUs) / busy * 100,
			"cpuSysPct": float64(p.CPUSysUs) / busy * 100, "rssMb": float64(p.RSSBytes) / (1 << 20),
			"dbPoolSize": p.PoolSize, "dbPoolActive": p.PoolActive, "dbPoolIdle": p.PoolIdle,
			"requestsPerSecond": float64(p.Requests) / float64(win.BucketMinutes*60), "parkedPops": p.Parked}
	}))
}

// opJSON is one operation's counts and latency in a bucket. p50Ms, p95Ms and p99Ms come from
// the bucket's latency histogram (docs/api/admin-api.md §6, dashboard M13): null without
// requests, and also for minutes recorded before the histograms existed.
func opJSON(requests int64, msSum, msMax float64, hist []int64, extra ...any) map[string]any {
	avg := 0.0
	if requests > 0 {
		avg = msSum / float64(requests)
	}
	m := map[string]any{"requests": requests, "avgMs": avg, "maxMs": msMax,
		"p50Ms": mq.LatencyPercentile(hist, msMax, 0.50), "p95Ms": mq.LatencyPercentile(hist, msMax, 0.95),
		"p99Ms": mq.LatencyPercentile(hist, msMax, 0.99)}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// analyticsWorkers serves per-instance operation counts and latencies.
func (s *Server) analyticsWorkers(w http.ResponseWriter, r *http.Request) {
	rows, win, ok := s.workerRows(w, r)
	if !ok {
		return
	}
	series(w, win, "workers", workerSeries(rows, func(p mq.WorkerPoint) any {
		return map[string]any{"timestamp": msTime(p.At),
			"push":        opJSON(p.PushRequests, p.PushMsSum, p.PushMsMax, p.PushHist, "messages", p.PushMessages),
			"pop":         opJSON(p.PopRequests, p.PopMsSum, p.PopMsMax, p.PopHist, "messages", p.PopMessages, "empty", p.PopEmpty),
			"ack":         opJSON(p.AckRequests, p.AckMsSum, p.AckMsMax, p.AckHist, "messages", p.AckMessages, "success", p.AckSuccess, "failed", p.AckFailed),
			"transaction": opJSON(p.Transactions, p.TxnMsSum, p.TxnMsMax, p.TxnHist),
			"dbErrors":    p.DBErrors, "dlq": p.DLQ}
	}))
}

type queueSeriesJSON struct {
	Queue  string `json:"queue"`
	Points []any  `json:"points"`
}

// queueOpsPoint renders one bucket of queue-ops.
func queueOpsPoint(p mq.QueuePoint, secs float64) map[string]any {
	return map[string]any{"timestamp": msTime(p.At), "pushRequests": p.PushRequests,
		"pushMessages": p.PushMessages, "popRequests": p.PopRequests, "popMessages": p.PopMessages,
		"popEmpty": p.PopEmpty, "ackRequests": p.AckRequests, "ackMessages": p.AckMessages,
		"ackSuccess": p.AckSuccess, "ackFailed": p.AckFailed, "transactions": p.Transactions, "dlq": p.DLQ,
		"pushPerSecond": float64(p.PushMessages) / secs, "popPerSecond": float64(p.PopMessages) / secs,
		"ackPerSecond": float64(p.AckMessages) / secs}
}

// analyticsQueueOps serves push, pop, ack and transaction counts and rates per queue: the
// busiest limit queues, and "other" summing the ones left out.
func (s *Server) analyticsQueueOps(w http.ResponseWriter, r *http.Request) {
	var other []mq.QueuePoint
	sets, win, ok := seriesOf(s, w, r, func(ctx context.Context, win mq.Window, q url.Values) ([]mq.QueueSeriesSet[mq.QueuePoint], error) {
		var n nameArgs
		queue := n.query(q, "queue")
		if n.nul {
			return []mq.QueueSeriesSet[mq.QueuePoint]{{}}, nil
		}
		set, o, err := s.read.QueueOps(ctx, win, queue, seriesLimit(q))
		other = o
		return []mq.QueueSeriesSet[mq.QueuePoint]{set}, err
	})
	if !ok {
		return
	}
	secs := float64(win.BucketMinutes * 60)
	out := []queueSeriesJSON{}
	for _, g := range grouped(sets[0].Points, func(p mq.QueuePoint) string { return p.Queue }) {
		sj := queueSeriesJSON{Queue: g[0].Queue}
		for _, p := range g {
			sj.Points = append(sj.Points, queueOpsPoint(p, secs))
		}
		out = append(out, sj)
	}
	otherJSON := make([]map[string]any, len(other))
	for i, p := range other {
		otherJSON[i] = queueOpsPoint(p, secs)
	}
	series(w, win, "queues", out, "omittedQueues", sets[0].Omitted, "other", otherJSON)
}

// analyticsQueueLag serves pop lag (from the metrics) with consumer lag and depth (from the
// stats history) per queue and bucket.
func (s *Server) analyticsQueueLag(w http.ResponseWriter, r *http.Request) {
	var depth []mq.DepthPoint
	sets, win, ok := seriesOf(s, w, r, func(ctx context.Context, win mq.Window, q url.Values) ([]mq.QueueSeriesSet[mq.QueuePoint], error) {
		var n nameArgs
		queue := n.query(q, "queue")
		if n.nul {
			return []mq.QueueSeriesSet[mq.QueuePoint]{{}}, nil
		}
		set, d, err := s.read.QueueLag(ctx, win, queue, seriesLimit(q))
		depth = d
		return []mq.QueueSeriesSet[mq.QueuePoint]{set}, err
	})
	if !ok {
		return
	}
	rows := sets[0].Points
	type key struct {
		queue string
		at    time.Time
	}
	points := map[key]map[string]any{}
	var order []key
	at := func(k key) map[string]any {
		p := points[k]
		if p == nil {
			p = map[string]any{"timestamp": msTime(k.at), "avgPopLagMs": 0.0, "maxPopLagMs": 0.0,
				"maxTimeLagSeconds": int64(0), "pending": 0.0, "processing": 0.0}
			points[k] = p
			order = append(order, k)
		}
		return p
	}
	for _, p := range rows {
		pt := at(key{p.Queue, p.At})
		pt["avgPopLagMs"], pt["maxPopLagMs"] = p.AvgLagMs, p.MaxLagMs
	}
	for _, d := range depth {
		pt := at(key{d.Queue, d.At})
		pt["maxTimeLagSeconds"], pt["pending"], pt["processing"] = d.MaxTimeLagSeconds, d.AvgPending, d.AvgInFlight
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.queue, b.queue), a.at.Compare(b.at))
	})
	out := []queueSeriesJSON{}
	for _, g := range grouped(order, func(k key) string { return k.queue }) {
		sj := queueSeriesJSON{Queue: g[0].queue}
		for _, k := range g {
			sj.Points = append(sj.Points, points[k])
		}
		out = append(out, sj)
	}
	series(w, win, "queues", out, "omittedQueues", sets[0].Omitted)
}

// analyticsParked serves parked long-poll pops per queue and instance.
func (s *Server) analyticsParked(w http.ResponseWriter, r *http.Request) {
	sets, win, ok := seriesOf(s, w, r, func(ctx context.Context, win mq.Window, q url.Values) ([]mq.QueueSeriesSet[mq.ParkedPoint], error) {
		var n nameArgs
		queue := n.query(q, "queue")
		if n.nul {
			return []mq.QueueSeriesSet[mq.ParkedPoint]{{}}, nil
		}
		set, err := s.read.ParkedSeries(ctx, win, queue, seriesLimit(q))
		return []mq.QueueSeriesSet[mq.ParkedPoint]{set}, err
	})
	if !ok {
		return
	}
	rows := sets[0].Points
	type replica struct {
		Queue    string `json:"queue"`
		WorkerID string `json:"workerId"`
		Points   []any  `json:"points"`
	}
	out := []replica{}
	for _, g := range grouped(rows, func(p mq.ParkedPoint) [2]string { return [2]string{p.Queue, p.WorkerID} }) {
		rj := replica{Queue: g[0].Queue, WorkerID: g[0].WorkerID}
		for _, p := range g {
			rj.Points = append(rj.Points, map[string]any{"timestamp": msTime(p.At), "parked": p.Parked})
		}
		out = append(out, rj)
	}
	series(w, win, "queues", out, "omittedQueues", sets[0].Omitted)
}

// analyticsRetention serves the retention history (docs/api/concepts.md §11): the newest 1,000
// runs of the queue asked, or of the limit queues that lost the most messages (default 10, at
// most 100), and totals per type over the window.
func (s *Server) analyticsRetention(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	win, ok := s.seriesWindow(w, q, time.Hour)
	if !ok {
		return
	}
	var n nameArgs
	queue := n.query(q, "queue")
	var runs []mq.RetentionRun
	var totals []mq.RetentionTotal
	var omitted int
	var err error
	if !n.nul {
		runs, totals, omitted, err = s.read.RetentionHistory(r.Context(), win, queue, seriesLimit(q))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	type runJSON struct {
		RunID        string `json:"runId"`
		RunAt        msTime `json:"runAt"`
		Queue        string `json:"queue"`
		Partition    string `json:"partition"`
		Type         string `json:"type"`
		Removed      int64  `json:"removed"`
		Unconsumed   int64  `json:"unconsumed"`
		DeadLettered int64  `json:"deadLettered"`
	}
	type totalJSON struct {
		Type         string `json:"type"`
		Removed      int64  `json:"removed"`
		Unconsumed   int64  `json:"unconsumed"`
		DeadLettered int64  `json:"deadLettered"`
	}
	rj := make([]runJSON, len(runs))
	for i, h := range runs {
		rj[i] = runJSON{h.RunID, msTime(h.At), h.Queue, h.Partition, h.Kind, h.Removed, h.Unconsumed, h.DeadLettered}
	}
	tj := make([]totalJSON, len(totals))
	for i, t := range totals {
		tj[i] = totalJSON{t.Kind, t.Removed, t.Unconsumed, t.DeadLettered}
	}
	series(w, win, "runs", rj, "totals", tj, "omittedQueues", omitted)
}

// analyticsPostgres serves PostgreSQL's size and activity figures.
func (s *Server) analyticsPostgres(w http.ResponseWriter, r *http.Request) {
	p, err := s.read.PostgresStats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hit := 0.0
	if p.BlocksHit+p.BlocksRead > 0 {
		hit = float64(p.BlocksHit) / float64(p.BlocksHit+p.BlocksRead)
	}
	tables := make([]map[string]any, len(p.Tables))
	for i, t := range p.Tables {
		tables[i] = map[string]any{"name": t.Name, "rows": t.Rows, "totalBytes": t.TotalBytes,
			"tableBytes": t.TableBytes, "indexBytes": t.IndexBytes, "seqScans": t.SeqScans,
			"indexScans": t.IndexScans, "deadRows": t.DeadRows, "lastVacuum": msOpt(t.LastVacuum)}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"database": map[string]any{"name": p.Database, "sizeBytes": p.SizeBytes, "commits": p.Commits,
			"rollbacks": p.Rollbacks, "cacheHitRatio": hit, "deadlocks": p.Deadlocks, "tempBytes": p.TempBytes,
			"connections": map[string]any{"total": p.Connections, "active": p.Active, "idle": p.Idle,
				"idleInTransaction": p.IdleInTransaction, "waitingOnLocks": p.WaitingOnLocks}},
		"tables": tables, "horizon": s.horizonJSON(p.Horizon)})
}

// horizonJSON is the oldest snapshot horizon held on the database (docs/operations.md, "A held
// snapshot horizon"): its age, whether it is past XMIN_WARN_SECONDS, its holder, and the
// replication slots and walsenders holding one. The ages in seconds are null when the holder is
// another role's session the broker's database user may not inspect (hidden).
func (s *Server) horizonJSON(h mq.XminHorizon) map[string]any {
	var holder, age any = nil, h.AgeSeconds()
	if o := h.Holder; o != nil {
		var held any = o.AgeSeconds
		if o.Hidden {
			held, age = nil, nil
		}
		holder = map[string]any{"pid": o.PID, "applicationName": o.ApplicationName, "state": o.State,
			"backendType": o.BackendType, "hidden": o.Hidden, "xactStart": msTime(o.XactStart), "ageSeconds": held,
			"xidAge": o.XidAge}
	}
	repl := make([]map[string]any, len(h.Replication))
	for i, r := range h.Replication {
		repl[i] = map[string]any{"name": r.Name, "type": r.Type, "active": r.Active, "xminAge": r.XminAge,
			"catalogXminAge": r.CatalogXminAge}
	}
	return map[string]any{"ageSeconds": age, "warnSeconds": s.cfg.XminWarn.Seconds(),
		"warning": s.cfg.XminWarn > 0 && h.Past(s.cfg.XminWarn), "holder": holder, "replication": repl}
}
