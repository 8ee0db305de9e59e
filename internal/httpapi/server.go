package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

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
	// Database reports the connection's details for GET /api/v1/system/health; nil: the route
	// answers without databaseDetail.
	Database Diagnostics
}

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
	s := &Server{data: data, read: read, cfg: cfg, log: log}
	r := NewRouter()
	if cfg.Auth != nil {
		r.Use(AuthMiddleware(cfg.Auth, log))
	}
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
	return r
}

// fail answers a broker error: 503 when the database is unavailable, 500 otherwise (the
// detail is logged, never sent).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case windowError(w, err):
		// The read side's own guard on a window (docs/api/operations.md §9.5).
	case errors.Is(err, mq.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, "Database unavailable")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal server error")
	}
}

// health serves the public GET /health (docs/api/admin-api.md §10.1): status fields only, never
// the database's address, user or error text, not even while it is down (operations.md §9.6).
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
	if err := s.data.Ping(r.Context()); err != nil {
		status, db, ok = "unhealthy", "disconnected", false
	}
	// Maintenance modes and the file buffer arrive with their issue; until then they are off
	// and empty, which is what this broker does.
	return healthBody{Status: status, Database: db, Server: "queen-go", Version: s.cfg.Version,
		WorkerID: s.cfg.WorkerID, FileBuffer: fileBufferCounts{}}, ok
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
