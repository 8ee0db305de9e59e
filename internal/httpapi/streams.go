package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// The streams routes (docs/api/streams.md): registration, the atomic cycle, shard reads, and
// the listing and deletion of queries. Validation (streams_parse.go) answers 400 before any
// database work; a deterministic failure is never a 5xx, since the streams SDKs retry those.

// registerStreams adds the routes with their levels (docs/api/streams.md §2).
func (s *Server) registerStreams(r *Router) {
	r.Handle(http.MethodPost, "/streams/v1/queries", LevelReadWrite, s.streamRegister)
	r.Handle(http.MethodPost, "/streams/v1/cycle", LevelReadWrite, s.streamCycle)
	r.Handle(http.MethodPost, "/streams/v1/state/get", LevelReadOnly, s.streamState)
	r.Handle(http.MethodGet, "/streams/v1/queries", LevelReadOnly, s.streamQueries)
	r.Handle(http.MethodDelete, "/streams/v1/queries/:name", LevelAdmin, s.streamDelete)
}

// streamBody reads a streams request body: a JSON object, decoded field by field.
func streamBody(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, bool) {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if !isObject(body) || json.Unmarshal(body, &fields) != nil {
		writeError(w, http.StatusBadRequest, "request body must be a JSON object")
		return nil, false
	}
	return fields, true
}

type streamRegisteredJSON struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash,omitempty"`
	Fresh      *bool  `json:"fresh,omitempty"`
	Reset      *bool  `json:"reset,omitempty"`
	Error      string `json:"error,omitempty"`
}

// streamRegister serves POST /streams/v1/queries (docs/api/streams.md §3).
func (s *Server) streamRegister(w http.ResponseWriter, r *http.Request) {
	fields, ok := streamBody(w, r)
	if !ok {
		return
	}
	reg, msg := parseStreamRegistration(fields)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	out, err := s.data.StreamRegister(r.Context(), reg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if out.Outcome == mq.StreamMismatch {
		writeJSON(w, http.StatusConflict, streamRegisteredJSON{QueryID: out.QueryID, Name: reg.Name,
			Error: "config_hash mismatch: operator chain changed for queryId '" + reg.Name +
				"'. Pass reset:true to wipe existing state, or use a new queryId."})
		return
	}
	fresh, reset := out.Outcome == mq.StreamFresh, out.Outcome == mq.StreamReset
	writeJSON(w, http.StatusOK, streamRegisteredJSON{Success: true, QueryID: out.QueryID, Name: reg.Name,
		ConfigHash: reg.ConfigHash, Fresh: &fresh, Reset: &reset})
}

type streamPushResultJSON struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transaction_id"`
	Status        string  `json:"status"`
	MessageID     string  `json:"message_id"`
	PartitionID   string  `json:"partition_id"`
	TraceID       *string `json:"trace_id"`
	QueueName     string  `json:"queueName"`
}

type streamAckResultJSON struct {
	Success       bool  `json:"success"`
	Count         int64 `json:"count"`
	LeaseReleased bool  `json:"lease_released"`
	DLQ           bool  `json:"dlq"`
}

type streamCycleJSON struct {
	Success         bool                   `json:"success"`
	QueryID         string                 `json:"query_id"`
	PartitionID     string                 `json:"partition_id"`
	QueueName       string                 `json:"queueName"`
	StateOpsApplied int                    `json:"state_ops_applied"`
	PushResults     []streamPushResultJSON `json:"push_results"`
	AckResult       *streamAckResultJSON   `json:"ack_result"`
	Error           string                 `json:"error,omitempty"`
}

// streamCycle serves POST /streams/v1/cycle (docs/api/streams.md §4).
func (s *Server) streamCycle(w http.ResponseWriter, r *http.Request) {
	fields, ok := streamBody(w, r)
	if !ok {
		return
	}
	c, msg := parseStreamCycle(fields)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	out, err := s.data.StreamCycle(r.Context(), c, producerSub(r))
	if s.streamNotFound(w, err) {
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ans := streamCycleJSON{Success: out.Rollback == "", QueryID: c.QueryID, PartitionID: c.PartitionID,
		QueueName: out.SourceQueue, PushResults: []streamPushResultJSON{}, Error: out.Rollback}
	if out.Rollback == "" {
		ans.StateOpsApplied = out.StateOpsApplied
		for _, p := range out.PushResults {
			e := streamPushResultJSON{Index: p.Index, TransactionID: p.TransactionID, Status: p.Status,
				MessageID: p.MessageID, PartitionID: p.PartitionID, QueueName: p.Queue}
			if p.TraceID != "" {
				t := p.TraceID
				e.TraceID = &t
			}
			ans.PushResults = append(ans.PushResults, e)
		}
		if a := out.Ack; a != nil {
			ans.AckResult = &streamAckResultJSON{Success: true, Count: a.Count, LeaseReleased: a.LeaseReleased, DLQ: a.DLQ}
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// streamNotFound answers the 404s of an unknown query or partition.
func (s *Server) streamNotFound(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, mq.ErrQueryNotFound):
		writeError(w, http.StatusNotFound, "Query not found")
	case errors.Is(err, mq.ErrPartitionNotFound):
		writeError(w, http.StatusNotFound, "Partition not found")
	default:
		return false
	}
	return true
}

type streamRowJSON struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// streamState serves POST /streams/v1/state/get (docs/api/streams.md §5).
func (s *Server) streamState(w http.ResponseWriter, r *http.Request) {
	fields, ok := streamBody(w, r)
	if !ok {
		return
	}
	q, msg := parseStreamStateQuery(fields)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	rows, err := s.data.StreamState(r.Context(), q)
	if s.streamNotFound(w, err) {
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]streamRowJSON, len(rows))
	for i, row := range rows {
		out[i] = streamRowJSON{Key: row.Key, Value: row.Value, UpdatedAt: formatMilli(row.UpdatedAt)}
	}
	writeJSON(w, http.StatusOK, struct {
		Success bool            `json:"success"`
		Rows    []streamRowJSON `json:"rows"`
	}{true, out})
}

type streamQueryJSON struct {
	QueryID     string  `json:"query_id"`
	Name        string  `json:"name"`
	SourceQueue string  `json:"source_queue"`
	SinkQueue   *string `json:"sink_queue"`
	ConfigHash  string  `json:"config_hash"`
	StateRows   int64   `json:"state_rows"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

// streamQueries serves GET /streams/v1/queries (docs/api/streams.md §6).
func (s *Server) streamQueries(w http.ResponseWriter, r *http.Request) {
	qs, err := s.data.StreamQueries(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]streamQueryJSON, len(qs))
	for i, q := range qs {
		out[i] = streamQueryJSON{QueryID: q.QueryID, Name: q.Name, SourceQueue: q.SourceQueue, SinkQueue: q.SinkQueue,
			ConfigHash: q.ConfigHash, StateRows: q.StateRows, CreatedAt: formatMilli(q.CreatedAt), UpdatedAt: formatMilli(q.UpdatedAt)}
	}
	writeJSON(w, http.StatusOK, struct {
		Queries []streamQueryJSON `json:"queries"`
	}{out})
}

// streamDelete serves DELETE /streams/v1/queries/:name (docs/api/streams.md §6).
func (s *Server) streamDelete(w http.ResponseWriter, r *http.Request) {
	var names nameArgs
	name := names.path(r, "name")
	var existed bool
	var n int64
	if !names.nul {
		var err error
		if existed, n, err = s.data.StreamDelete(r.Context(), name); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Deleted          bool   `json:"deleted"`
		Name             string `json:"name"`
		Existed          bool   `json:"existed"`
		StateRowsDeleted int64  `json:"state_rows_deleted"`
	}{true, name, existed, n})
}
