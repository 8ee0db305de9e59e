package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// Diagnostics reports what this instance knows of its database (*store.Store), without
// touching it, for GET /api/v1/system/health.
type Diagnostics interface {
	DatabaseDetail() mq.DatabaseDetail
}

type poolDetailJSON struct {
	Size    int32 `json:"size"`
	Active  int32 `json:"active"`
	Idle    int32 `json:"idle"`
	Waiting int32 `json:"waiting"`
}

type databaseDetailJSON struct {
	Target           string         `json:"target"`
	User             string         `json:"user"`
	Schema           string         `json:"schema"`
	Embedded         bool           `json:"embedded"`
	TLS              string         `json:"tls"`
	Pool             poolDetailJSON `json:"pool"`
	Listener         string         `json:"listener"`
	LastOKAt         msTime         `json:"lastOkAt"`
	UnavailableSince msTime         `json:"unavailableSince"`
	LastError        *string        `json:"lastError"`
	LastErrorAt      msTime         `json:"lastErrorAt"`
}

type systemHealthJSON struct {
	healthBody
	DatabaseDetail *databaseDetailJSON      `json:"databaseDetail"`
	Jobs           map[string]jobDetailJSON `json:"jobs"`
}

// systemHealth serves GET /api/v1/system/health (docs/api/admin-api.md §10.2): /health's probe
// with the details an operator needs and a public route must not show. It always answers 200,
// also without the database: it is a diagnostic, not a load balancer's probe.
func (s *Server) systemHealth(w http.ResponseWriter, r *http.Request) {
	body, _ := s.probe(r)
	out := systemHealthJSON{healthBody: body, Jobs: jobDetails(s.cfg.Jobs)}
	if s.cfg.Database != nil {
		d := s.cfg.Database.DatabaseDetail()
		dj := &databaseDetailJSON{Target: d.Target, User: d.User, Schema: d.Schema, Embedded: d.Embedded, TLS: d.TLS,
			// waiting: requests queued for a connection are what pgxpool counts as connections
			// being established; with a full pool both mean "a request is waiting".
			Pool:     poolDetailJSON{Size: d.Pool.Max, Active: d.Pool.Acquired, Idle: d.Pool.Idle, Waiting: d.Pool.Waiting},
			Listener: d.Listener, LastOKAt: msOpt(d.LastOK), UnavailableSince: msOpt(d.UnavailableSince),
			LastErrorAt: msOpt(d.LastErrorAt)}
		if d.LastError != "" {
			dj.LastError = &d.LastError
		}
		out.DatabaseDetail = dj
	}
	writeJSON(w, http.StatusOK, out)
}
