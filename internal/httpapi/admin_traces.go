package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// Trace records (docs/api/admin-api.md §4). The GET forms answer in snake_case (docs/api/README.md §2.2).

// Listing defaults.
const (
	defaultTracesByNameLimit = 100
	defaultTraceNamesLimit   = 50
)

type addTraceJSON struct {
	TransactionID json.RawMessage `json:"transactionId"`
	PartitionID   json.RawMessage `json:"partitionId"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup json.RawMessage `json:"consumerGroup"`
	EventType     json.RawMessage `json:"eventType"`
	TraceNames    json.RawMessage `json:"traceNames"`
}

func (s *Server) addTrace(w http.ResponseWriter, r *http.Request) {
	var a addTraceJSON
	if !readObject(w, r, &a) {
		return
	}
	tx, okTx := asString(a.TransactionID)
	pid, okPid := asString(a.PartitionID)
	if !okTx || !okPid || tx == "" || pid == "" {
		writeError(w, http.StatusBadRequest, "transactionId and partitionId are required")
		return
	}
	if msg := addTraceError(&a, tx); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	rec := mq.TraceRecord{PartitionID: pid, TransactionID: tx, Group: stringOr(a.ConsumerGroup, mq.QueueMode),
		EventType: stringOr(a.EventType, "info"), Data: a.Data, WorkerID: s.cfg.WorkerID, Names: parseTraceNames(a.TraceNames)}
	var id string
	var found bool
	var err error
	// Body names holding U+0000: the message's key is refused above for its length only, and
	// such a key (or partition id) names no message.
	if !hasNUL(pid, tx) {
		id, found, err = s.read.AddTrace(r.Context(), rec)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		writeFailure(w, http.StatusNotFound, "Message not found")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "traceId": id})
}

// addTraceError checks a trace body after its ids are known to be strings, in the order of
// docs/api/admin-api.md §4.1: the key's length, data, then the names (docs/api/README.md §2.9: over 255
// characters, or holding U+0000 where a non-string would fall back to a default, is a 400).
func addTraceError(a *addTraceJSON, tx string) string {
	if tooLong(tx) {
		return "transactionId exceeds 255 characters"
	}
	if isNull(a.Data) {
		return "data is required"
	}
	if msg := optName(a.ConsumerGroup, "consumerGroup", "consumerGroup"); msg != "" {
		return msg
	}
	if msg := optName(a.EventType, "eventType", "eventType"); msg != "" {
		return msg
	}
	// A fresh slice: decoding into one whose element aliases a.TraceNames would overwrite
	// the body's bytes (RawMessage decoding appends into the element's array).
	var list []json.RawMessage
	if isArray(a.TraceNames) {
		_ = json.Unmarshal(a.TraceNames, &list) // the body is valid JSON, so is this array
	} else {
		list = []json.RawMessage{a.TraceNames}
	}
	for _, n := range list {
		if msg := optName(n, "traceName", "traceName"); msg != "" {
			return msg
		}
	}
	return ""
}

// stringOr returns raw when it is a non-empty JSON string, else def.
func stringOr(raw json.RawMessage, def string) string {
	if v, ok := asString(raw); ok && v != "" {
		return v
	}
	return def
}

// parseTraceNames reads traceNames: one string or an array of strings; empty names and other
// values are ignored.
func parseTraceNames(raw json.RawMessage) []string {
	var list []json.RawMessage
	if isArray(raw) {
		_ = json.Unmarshal(raw, &list)
	} else {
		list = []json.RawMessage{raw}
	}
	names := []string{}
	for _, v := range list {
		if n, ok := asString(v); ok && n != "" {
			names = append(names, n)
		}
	}
	return names
}

// traceJSON is a trace record in the GET answers; the by-name form adds its message.
type traceJSON struct {
	ID            string          `json:"id"`
	TransactionID *string         `json:"transaction_id,omitempty"`
	PartitionID   *string         `json:"partition_id,omitempty"`
	EventType     string          `json:"event_type"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup string          `json:"consumer_group"`
	WorkerID      string          `json:"worker_id"`
	CreatedAt     msTime          `json:"created_at"`
	*traceMessageJSON
	TraceNames []string `json:"trace_names"`
}

// traceMessageJSON is where a named trace's message lives and its payload (null once gone).
type traceMessageJSON struct {
	QueueName      *string         `json:"queue_name"`
	PartitionName  *string         `json:"partition_name"`
	MessagePayload json.RawMessage `json:"message_payload"`
}

func traceOut(t mq.Trace) traceJSON {
	names := t.Names
	if names == nil {
		names = []string{}
	}
	return traceJSON{ID: t.ID, EventType: t.EventType, Data: t.Data, ConsumerGroup: t.Group, WorkerID: t.WorkerID,
		CreatedAt: msTime(t.CreatedAt), TraceNames: names}
}

func (s *Server) messageTraces(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	pid, tx := n.path(r, "partitionId"), n.path(r, "transactionId")
	var traces []mq.Trace
	var err error
	if !n.nul {
		traces, err = s.read.MessageTraces(r.Context(), pid, tx)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"traces": mapRows(traces, traceOut)})
}

func (s *Server) tracesByName(w http.ResponseWriter, r *http.Request) {
	page := listPage(r.URL.Query(), defaultTracesByNameLimit)
	var n nameArgs
	name := n.path(r, "traceName")
	var traces []mq.NamedTrace
	var total int64
	var err error
	if !n.nul {
		traces, total, err = s.read.TracesByName(r.Context(), name, page)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := mapRows(traces, func(t mq.NamedTrace) traceJSON {
		o := traceOut(t.Trace)
		o.TransactionID, o.PartitionID = &t.TransactionID, &t.PartitionID
		o.traceMessageJSON = &traceMessageJSON{QueueName: t.Queue, PartitionName: t.Partition,
			MessagePayload: t.Payload} // a nil payload (message gone) encodes as null
		return o
	})
	writeJSON(w, http.StatusOK, map[string]any{"traces": out, "total": total, "pagination": pagination(page)})
}

type traceNameJSON struct {
	TraceName    string `json:"trace_name"`
	TraceCount   int64  `json:"trace_count"`
	MessageCount int64  `json:"message_count"`
	LastSeen     msTime `json:"last_seen"`
}

func (s *Server) traceNames(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := listPage(q, defaultTraceNamesLimit)
	var n nameArgs
	search := n.query(q, "search")
	var names []mq.TraceName
	var total int64
	var err error
	if !n.nul {
		names, total, err = s.read.TraceNames(r.Context(), search, page)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := mapRows(names, func(n mq.TraceName) traceNameJSON {
		return traceNameJSON{TraceName: n.Name, TraceCount: n.Traces, MessageCount: n.Messages, LastSeen: msTime(n.LastSeen)}
	})
	writeJSON(w, http.StatusOK, map[string]any{"trace_names": out, "total": total, "pagination": pagination(page)})
}
