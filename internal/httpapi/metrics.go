package httpapi

import (
	"net/http"
)

// Metrics routes (docs/api/admin-api.md §11). GET /metrics/prometheus is the collector's own handler.

// countRequests counts every routed request for the metrics (requests total and rate).
func (s *Server) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.cfg.Metrics.Request()
		next.ServeHTTP(w, r)
	})
}

type metricsJSON struct {
	Uptime   int64 `json:"uptime"`
	Requests struct {
		Total int64   `json:"total"`
		Rate  float64 `json:"rate"`
	} `json:"requests"`
	Messages struct {
		Total int64   `json:"total"`
		Rate  float64 `json:"rate"`
	} `json:"messages"`
	Database struct {
		PoolSize        int32 `json:"poolSize"`
		IdleConnections int32 `json:"idleConnections"`
		WaitingRequests int32 `json:"waitingRequests"`
	} `json:"database"`
	Memory struct {
		RSS          int64 `json:"rss"`
		HeapTotal    int64 `json:"heapTotal"`
		HeapUsed     int64 `json:"heapUsed"`
		External     int64 `json:"external"`
		ArrayBuffers int64 `json:"arrayBuffers"`
	} `json:"memory"`
	CPU struct {
		User   int64 `json:"user"`
		System int64 `json:"system"`
	} `json:"cpu"`
}

// metricsJSON serves GET /metrics: this instance's figures, read without the database.
func (s *Server) metricsJSON(w http.ResponseWriter, r *http.Request) {
	m := s.cfg.Metrics.Snapshot()
	var out metricsJSON
	out.Uptime = int64(m.Uptime.Seconds())
	out.Requests.Total, out.Requests.Rate = m.Requests, m.RequestRate
	out.Messages.Total, out.Messages.Rate = m.Messages, m.MessageRate
	out.Database.PoolSize, out.Database.IdleConnections, out.Database.WaitingRequests = m.Pool.Max, m.Pool.Idle, m.Pool.Waiting
	out.Memory.RSS, out.Memory.HeapTotal, out.Memory.HeapUsed = m.RSS, m.HeapTotal, m.HeapUsed
	out.CPU.User, out.CPU.System = m.CPUUserMicros, m.CPUSysMicros
	writeJSON(w, http.StatusOK, out)
}

// jobStateJSON is one background job as /health reports it (docs/api/operations.md §5). It has
// no error text: /health is public, and a failed run's text can carry the database's host,
// user and name (docs/api/admin-api.md §10.1); GET /api/v1/system/health adds it.
type jobStateJSON struct {
	State          string `json:"state"`
	Leader         bool   `json:"leader"`
	LastRunAt      msTime `json:"lastRunAt"`
	LastDurationMs int64  `json:"lastDurationMs"`
	Runs           int64  `json:"runs"`
}

// jobDetailJSON is one background job as GET /api/v1/system/health reports it: /health's
// fields and the last failed run's error text (null after a successful run).
type jobDetailJSON struct {
	jobStateJSON
	LastError *string `json:"lastError"`
}

// jobStates renders the runner's job states for /health; without a runner there are none.
func jobStates(r Jobs) map[string]jobStateJSON {
	out := map[string]jobStateJSON{}
	for name, d := range jobDetails(r) {
		out[name] = d.jobStateJSON
	}
	return out
}

// jobDetails renders the runner's job states with their error texts.
func jobDetails(r Jobs) map[string]jobDetailJSON {
	out := map[string]jobDetailJSON{}
	if r == nil {
		return out
	}
	for name, st := range r.States() {
		j := jobDetailJSON{jobStateJSON: jobStateJSON{State: st.State, Leader: st.Leader, LastRunAt: msOpt(st.LastRunAt),
			LastDurationMs: st.LastDuration.Milliseconds(), Runs: st.Runs}}
		if st.LastError != "" {
			j.LastError = &st.LastError
		}
		out[name] = j
	}
	return out
}
