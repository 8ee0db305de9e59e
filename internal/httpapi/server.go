package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/mq"
)

// Config holds the HTTP layer's defaults.
type Config struct {
	DefaultBatch   int           // DEFAULT_BATCH_SIZE
	DefaultTimeout time.Duration // DEFAULT_TIMEOUT
	WorkerID       string
	Version        string
	// Auth turns authentication on (JWT_ENABLED); nil leaves every route open.
	Auth *auth.Verifier
	// Metrics counts requests and serves /metrics and /metrics/prometheus (required).
	Metrics Metrics
	// Jobs runs stats refreshes and reports the background jobs in /health; nil: no jobs.
	Jobs Jobs
	// MaxInflightBodyBytes bounds the request bodies held in memory at once
	// (QUEEN_MAX_INFLIGHT_BODY_BYTES); 0: DefaultMaxInflightBodyBytes.
	MaxInflightBodyBytes int64
	// BodyReadTimeout is the time a request body has to arrive after the headers
	// (HTTP_READ_TIMEOUT); 0: DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// Maintenance holds the maintenance modes; nil: both off and fixed (maintenance.go).
	Maintenance Maintenance
	// Database reports the connection's details for GET /api/v1/system/health; nil: the route
	// answers without databaseDetail.
	Database Diagnostics
	// FileBuffer reports this instance's spool figures for /health and
	// /api/v1/status/buffers: records not yet replayed, and those of the batch failing to
	// replay. nil: no spool, both zero.
	FileBuffer func() (pending, failed int)
	// XminWarn is XMIN_WARN_SECONDS, past which GET /api/v1/analytics/postgres-stats flags the
	// oldest snapshot on the database (horizon.warning); 0: never.
	XminWarn time.Duration
	// Dashboard serves the web dashboard at / and /assets/* (docs/api/dashboard.md §4.1), level
	// public; nil (DASHBOARD_ENABLED=false): both answer the JSON 404 of any unknown path.
	Dashboard http.Handler
	// Tracer starts the server span of every routed request (OpenTelemetry); nil: no spans and
	// no traceparent handling at all, which is the cost of tracing when it is off.
	Tracer trace.Tracer
	// AllowedOrigins are the Web origins whose pages may call the broker while Auth is nil
	// (CORS_ALLOWED_ORIGINS, normalized; "*" any). Requests carrying another Origin, except the
	// broker's own, are refused with 403 (admission.go).
	AllowedOrigins []string
	// AllowedHosts (ALLOWED_HOSTS) and ListenHost (HOST) decide which Host headers are
	// accepted: when AllowedHosts is set or ListenHost is a loopback address, a Host naming
	// neither localhost, an IP address, ListenHost nor an entry gets 421 (DNS rebinding).
	AllowedHosts []string
	ListenHost   string
	// Overloaded reports, once a request is done, whether it was answered as load: a call or a
	// wait of it passed a deadline on a database the outage probe reached (budget.Overloaded).
	// Such requests count in queen_overload_answers_total; nil: none is counted.
	Overloaded func(context.Context) bool
	// AccessLog logs one line per request, every answer included (ACCESS_LOG, accesslog.go).
	AccessLog bool
	// Limits stores the tenants' limits (tenant_limits.go); nil: their routes answer 503.
	Limits Limits
}

// Defaults of the body limits, the same as the configuration's (docs/api/operations.md §1.3),
// for callers that build a Config by hand.
const (
	// DefaultMaxInflightBodyBytes is QUEEN_MAX_INFLIGHT_BODY_BYTES's default, 512 MiB.
	DefaultMaxInflightBodyBytes = 512 << 20
	// DefaultBodyReadTimeout is HTTP_READ_TIMEOUT's default.
	DefaultBodyReadTimeout = 60 * time.Second
)

// maxPopTimeout caps a long poll (docs/api/data-api.md §3.1).
const maxPopTimeout = 120 * time.Second

// Server serves the Queen HTTP API over the data path and the read side.
type Server struct {
	data DataPath
	read ReadSide
	cfg  Config
	log  *slog.Logger
}

// New returns the API handler with every route registered.
func New(data DataPath, read ReadSide, cfg Config, log *slog.Logger) http.Handler {
	if cfg.DefaultBatch < 1 {
		cfg.DefaultBatch = 1
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.MaxInflightBodyBytes <= 0 {
		cfg.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	s := &Server{data: data, read: read, cfg: cfg, log: log}
	limits := &bodyLimits{budget: newBodyBudget(cfg.MaxInflightBodyBytes), readTimeout: cfg.BodyReadTimeout}
	r := NewRouter()
	r.admission = newAdmission(cfg.Auth != nil, cfg.AllowedOrigins, cfg.AllowedHosts, cfg.ListenHost)
	if cfg.AccessLog {
		r.Use(noteRoute) // first, so a request authentication refuses is logged with its route
	}
	// Outermost, so rejected requests (401, 403, 413) are measured and traced too.
	r.Use(s.telemetry)
	if cfg.Auth != nil {
		r.Use(AuthMiddleware(cfg.Auth, log))
	}
	r.Use(scopeTenant)
	// After authentication, so that an unauthenticated body is drained and never held.
	r.Use(limits.load)
	s.register(r)
	h := limits.startClock(r)
	if cfg.AccessLog {
		h = accessLog(log, h)
	}
	return h
}

// register adds every route with its access level to r.
func (s *Server) register(r *Router) {
	r.Handle(http.MethodGet, "/health", LevelPublic, s.health)
	r.Handle(http.MethodGet, "/api/v1/system/health", LevelAdmin, s.systemHealth)
	r.Handle(http.MethodPost, "/api/v1/configure", LevelReadWrite, s.configure)
	r.Handle(http.MethodPost, "/api/v1/push", LevelReadWrite, s.push)
	r.Handle(http.MethodGet, "/api/v1/pop/queue/:queue", LevelReadWrite, s.popQueue)
	r.Handle(http.MethodGet, "/api/v1/pop/queue/:queue/partition/:partition", LevelReadWrite, s.popPartition)
	r.Handle(http.MethodGet, "/api/v1/pop", LevelReadWrite, s.popNamespace)
	r.Handle(http.MethodPost, "/api/v1/ack", LevelReadWrite, s.ack)
	r.Handle(http.MethodPost, "/api/v1/ack/batch", LevelReadWrite, s.ackBatch)
	r.Handle(http.MethodPost, "/api/v1/lease/:leaseId/extend", LevelReadWrite, s.extendLease)
	r.Handle(http.MethodPost, "/api/v1/transaction", LevelReadWrite, s.transaction)
	s.registerAdmin(r)
	s.registerStatus(r)
	s.registerMaintenance(r)
	s.registerStreams(r)
	s.registerAuthMe(r)
	s.registerTenantLimits(r)
	s.registerSystemJobs(r)
	if d := s.cfg.Dashboard; d != nil {
		r.Handle(http.MethodGet, "/", LevelPublic, d.ServeHTTP)
		r.Handle(http.MethodGet, "/assets/:file", LevelPublic, d.ServeHTTP)
	}
}

// fail answers a broker error: 503 when the database is unavailable, 500 otherwise (the
// detail is logged, never sent).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case windowError(w, err):
		// The read side's own guard on a window (docs/api/operations.md §9.5).
	case limitRefused(w, err):
		// Past a tenant limit: nothing was written (docs/api/concepts.md §14).
	case errors.Is(err, mq.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, mq.TextUnavailable)
	case errors.Is(err, mq.ErrBusy):
		// Load on a database that is there (docs/api/operations.md §9.7): try again shortly.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, mq.TextBusy)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal server error")
	}
}

// health serves the public GET /health (docs/api/admin-api.md §10.1): status fields only, never
// the database's address, user or error text, not even while it is down (docs/api/operations.md §9.6).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	body, ok := s.probe(r)
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	body.Jobs = jobStates(s.cfg.Jobs)
	writeJSON(w, code, body)
}

// probe runs /health's check and fills the fields /health and /api/v1/system/health share.
// The ping's error is deliberately dropped here: the store keeps it for the admin route and
// the log has it.
func (s *Server) probe(r *http.Request) (healthBody, bool) {
	status, db, ok := "healthy", "connected", true
	// A busy broker is healthy: its pool had no connection in time, but the outage probe
	// reached the database (docs/api/operations.md §9.7).
	if err := s.data.Ping(r.Context()); err != nil && !errors.Is(err, mq.ErrBusy) {
		status, db, ok = "unhealthy", "disconnected", false
	}
	// The maintenance flags and the spool figures are this instance's last known ones (no
	// database call).
	mt := s.maintenance()
	return healthBody{Status: status, Database: db, Server: "queen-go", Version: s.cfg.Version,
		WorkerID: s.cfg.WorkerID, MaintenanceMode: mt.PushMaintenance(), PopMaintenanceMode: mt.PopMaintenance(),
		FileBuffer: s.fileBuffer()}, ok
}

type healthBody struct {
	Status             string                  `json:"status"`
	Database           string                  `json:"database"`
	Server             string                  `json:"server"`
	Version            string                  `json:"version"`
	WorkerID           string                  `json:"worker_id"`
	MaintenanceMode    bool                    `json:"maintenanceMode"`
	PopMaintenanceMode bool                    `json:"popMaintenanceMode"`
	FileBuffer         fileBufferCounts        `json:"fileBuffer"`
	Jobs               map[string]jobStateJSON `json:"jobs,omitempty"` // this instance's view of the background jobs
}

type fileBufferCounts struct {
	Pending int `json:"pending"`
	Failed  int `json:"failed"`
}
