package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// Maintenance holds the maintenance modes (*broker.Broker; docs/api/operations.md §4.4): the
// last known flags without a database call, a read of the stored ones, and a change, which
// the holder spreads to every instance.
type Maintenance interface {
	// PushMaintenance and PopMaintenance are the last known flags (for /health).
	PushMaintenance() bool
	PopMaintenance() bool
	// ReadMaintenance reads the stored flags; on error it returns the last known ones.
	ReadMaintenance(ctx context.Context) (mq.MaintenanceState, error)
	// SetMaintenance turns one mode on or off for every instance; by is the token's sub (nil
	// without authentication), on this instance's WORKER_ID.
	SetMaintenance(ctx context.Context, mode mq.MaintenanceMode, enabled bool, by *string, on string) (mq.MaintenanceState, error)
}

// The answers' messages (docs/api/admin-api.md §9).
const (
	msgPushOn     = "Maintenance mode ENABLED. All PUSHes routing to file buffer."
	msgPushOff    = "Maintenance mode DISABLED. Background processor will drain buffer to DB."
	msgPopOn      = "Pop maintenance mode ENABLED. All POP operations will return empty arrays."
	msgPopOff     = "Pop maintenance mode DISABLED. Normal operation resumed."
	msgPopIsOn    = "Pop maintenance mode is ON. All POP operations return empty arrays."
	msgPopIsOff   = "Pop maintenance mode is OFF. Normal operation."
	msgNeedsValue = "enabled (boolean) is required"
)

// registerMaintenance adds the maintenance routes (docs/api/admin-api.md §9), admin level.
func (s *Server) registerMaintenance(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/system/maintenance", LevelAdmin, s.getMaintenance)
	r.Handle(http.MethodPost, "/api/v1/system/maintenance", LevelAdmin, s.setPushMaintenance)
	r.Handle(http.MethodGet, "/api/v1/system/maintenance/pop", LevelAdmin, s.getPopMaintenance)
	r.Handle(http.MethodPost, "/api/v1/system/maintenance/pop", LevelAdmin, s.setPopMaintenance)
}

// maintenance is the configured holder, or one that knows both modes off and cannot change
// them (a server built without one).
func (s *Server) maintenance() Maintenance {
	if s.cfg.Maintenance != nil {
		return s.cfg.Maintenance
	}
	return noMaintenance{}
}

// bufferStatsJSON is the spool's figures in the GET answer. The file buffer is not wired into
// the push path yet, so nothing is ever spooled: every count is truly 0.
type bufferStatsJSON struct {
	PendingCount int             `json:"pendingCount"`
	FailedCount  int             `json:"failedCount"`
	DBHealthy    bool            `json:"dbHealthy"`
	FailedFiles  failedFilesJSON `json:"failedFiles"`
}

type failedFilesJSON struct {
	Count         int `json:"count"`
	TotalBytes    int `json:"totalBytes"`
	TotalMB       int `json:"totalMB"`
	FailoverCount int `json:"failoverCount"`
	QoS0Count     int `json:"qos0Count"`
}

// getMaintenance serves GET /api/v1/system/maintenance: the stored flags, or without a
// database the last known ones with dbHealthy false (docs/api/operations.md §4.3).
func (s *Server) getMaintenance(w http.ResponseWriter, r *http.Request) {
	m, err := s.maintenance().ReadMaintenance(r.Context())
	fb := s.fileBuffer()
	writeJSON(w, http.StatusOK, struct {
		MaintenanceMode    bool            `json:"maintenanceMode"`
		PopMaintenanceMode bool            `json:"popMaintenanceMode"`
		BufferedMessages   int             `json:"bufferedMessages"`
		BufferHealthy      bool            `json:"bufferHealthy"`
		BufferStats        bufferStatsJSON `json:"bufferStats"`
	}{MaintenanceMode: m.Push, PopMaintenanceMode: m.Pop, BufferedMessages: fb.Pending, BufferHealthy: fb.Failed == 0,
		BufferStats: bufferStatsJSON{PendingCount: fb.Pending, FailedCount: fb.Failed, DBHealthy: err == nil}})
}

// getPopMaintenance serves GET /api/v1/system/maintenance/pop, like getMaintenance.
func (s *Server) getPopMaintenance(w http.ResponseWriter, r *http.Request) {
	m, _ := s.maintenance().ReadMaintenance(r.Context()) // last known without a database
	msg := msgPopIsOff
	if m.Pop {
		msg = msgPopIsOn
	}
	writePopMaintenance(w, m.Pop, msg)
}

// setPushMaintenance serves POST /api/v1/system/maintenance.
func (s *Server) setPushMaintenance(w http.ResponseWriter, r *http.Request) {
	m, ok := s.setMaintenance(w, r, mq.PushMaintenance)
	if !ok {
		return
	}
	msg := msgPushOff
	if m.Push {
		msg = msgPushOn
	}
	fb := s.fileBuffer()
	writeJSON(w, http.StatusOK, struct {
		MaintenanceMode  bool   `json:"maintenanceMode"`
		BufferedMessages int    `json:"bufferedMessages"`
		BufferHealthy    bool   `json:"bufferHealthy"`
		Message          string `json:"message"`
	}{MaintenanceMode: m.Push, BufferedMessages: fb.Pending, BufferHealthy: fb.Failed == 0, Message: msg})
}

// setPopMaintenance serves POST /api/v1/system/maintenance/pop.
func (s *Server) setPopMaintenance(w http.ResponseWriter, r *http.Request) {
	m, ok := s.setMaintenance(w, r, mq.PopMaintenance)
	if !ok {
		return
	}
	msg := msgPopOff
	if m.Pop {
		msg = msgPopOn
	}
	writePopMaintenance(w, m.Pop, msg)
}

func writePopMaintenance(w http.ResponseWriter, on bool, msg string) {
	writeJSON(w, http.StatusOK, struct {
		PopMaintenanceMode bool   `json:"popMaintenanceMode"`
		Message            string `json:"message"`
	}{on, msg})
}

// setMaintenance reads {"enabled":<boolean>} and changes mode; without a database it answers
// 503 (docs/api/operations.md §4.3), since a change only this instance knew would not be one.
func (s *Server) setMaintenance(w http.ResponseWriter, r *http.Request, mode mq.MaintenanceMode) (mq.MaintenanceState, bool) {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return mq.MaintenanceState{}, false
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields) // a body that is not an object has no enabled either
	enabled := string(fields["enabled"]) == "true"
	if !enabled && string(fields["enabled"]) != "false" {
		writeError(w, http.StatusBadRequest, msgNeedsValue)
		return mq.MaintenanceState{}, false
	}
	m, err := s.maintenance().SetMaintenance(r.Context(), mode, enabled, producerSub(r), s.cfg.WorkerID)
	if err != nil {
		s.fail(w, r, err)
		return mq.MaintenanceState{}, false
	}
	return m, true
}

// pushRefused answers a push refused because push maintenance is on (mq.ErrPushMaintenance):
// 503, like an unavailable database, since the client should retry later, but with a text
// that says why; nothing of the request was written.
func pushRefused(w http.ResponseWriter) {
	writeError(w, http.StatusServiceUnavailable, "Push maintenance mode is on")
}

// noMaintenance stands in when the server was built without a holder: both modes off, and no
// way to change them.
type noMaintenance struct{}

func (noMaintenance) PushMaintenance() bool { return false }
func (noMaintenance) PopMaintenance() bool  { return false }
func (noMaintenance) ReadMaintenance(context.Context) (mq.MaintenanceState, error) {
	return mq.MaintenanceState{}, nil
}
func (noMaintenance) SetMaintenance(context.Context, mq.MaintenanceMode, bool, *string, string) (mq.MaintenanceState, error) {
	return mq.MaintenanceState{}, mq.ErrUnavailable
}
