package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Operator routes: the partition listing (docs/api/admin-api.md §1.1), queue clear (§1.2) and
// DLQ deletion (§3.3).

// registerAdminOps adds the operator routes with their levels (docs/api/README.md §3).
func (s *Server) registerAdminOps(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/resources/partitions", LevelReadOnly, s.listPartitions)
	r.Handle(http.MethodDelete, "/api/v1/queues/:queue/clear", LevelAdmin, s.clearQueue)
	r.Handle(http.MethodPost, "/api/v1/messages/:partitionId/:transactionId/dlq", LevelReadWrite, s.moveToDLQ)
	r.Handle(http.MethodDelete, "/api/v1/dlq/:dlqId", LevelReadWrite, s.deleteDLQEntry)
	r.Handle(http.MethodPost, "/api/v1/dlq/delete", LevelReadWrite, s.deleteDLQ)
	s.registerAdminRequeue(r)
}

// Listing default of the partition listing.
const defaultPartitionsListLimit = 100

// listSort reads sort and order: keys maps each sort key to whether it sorts descending by
// default. msg is the 400 text of a value outside them.
func listSort(q map[string][]string, keys map[string]bool, def string) (key string, desc bool, msg string) {
	key = def
	if v, ok := queryString(q, "sort"); ok {
		if _, known := keys[v]; !known {
			return "", false, "Invalid sort: " + v
		}
		key = v
	}
	desc = keys[key]
	if v, ok := queryString(q, "order"); ok {
		switch v {
		case "asc":
			desc = false
		case "desc":
			desc = true
		default:
			return "", false, "Invalid order: " + v
		}
	}
	return key, desc, ""
}

type partitionRowJSON struct {
	ID             string       `json:"id"`
	Name           string       `json:"name"`
	Queue          string       `json:"queue"`
	QueueID        string       `json:"queueId"`
	Namespace      string       `json:"namespace"`
	Task           string       `json:"task"`
	CreatedAt      msTime       `json:"createdAt"`
	Messages       countersJSON `json:"messages"`
	ConsumerGroups int          `json:"consumerGroups"`
	ActiveLeases   int          `json:"activeLeases"`
	MaxTimeLag     int64        `json:"maxTimeLag"`
	OldestMessage  msTime       `json:"oldestMessage"`
	NewestMessage  msTime       `json:"newestMessage"`
	LastActivity   msTime       `json:"lastActivity"`
}

// listPartitions serves GET /api/v1/resources/partitions.
func (s *Server) listPartitions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, desc, msg := listSort(q, mq.PartitionSortKeys, "name")
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.PartitionFilter{Queue: n.query(q, "queue"), Namespace: n.query(q, "namespace"),
		Task: n.query(q, "task"), Search: n.query(q, "search"), Sort: key, Desc: desc,
		Page: listPage(q, defaultPartitionsListLimit)}
	var rows []mq.PartitionRow
	var total int64
	var statsAt *time.Time
	var err error
	if !n.nul {
		rows, total, statsAt, err = s.read.ListPartitions(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := mapRows(rows, func(p mq.PartitionRow) partitionRowJSON {
		return partitionRowJSON{ID: p.ID, Name: p.Name, Queue: p.Queue, QueueID: p.QueueID, Namespace: p.Namespace,
			Task: p.Task, CreatedAt: msTime(p.CreatedAt),
			Messages: countersJSON{Total: p.Total, Pending: p.Pending, Processing: p.Processing,
				Completed: p.Completed, DeadLetter: p.DeadLetter},
			ConsumerGroups: p.ConsumerGroups, ActiveLeases: p.ActiveLeases, MaxTimeLag: p.MaxTimeLag,
			OldestMessage: msOpt(p.Oldest), NewestMessage: msOpt(p.Newest), LastActivity: msTime(p.LastActivity)}
	})
	writeJSON(w, http.StatusOK, struct {
		Partitions []partitionRowJSON `json:"partitions"`
		Total      int64              `json:"total"`
		Pagination pageJSON           `json:"pagination"`
		StatsAge   *int64             `json:"statsAge"`
	}{out, total, pagination(f.Page), s.statsAge(statsAt)})
}

// clearQueue serves DELETE /api/v1/queues/:queue/clear.
func (s *Server) clearQueue(w http.ResponseWriter, r *http.Request) {
	var nq, np nameArgs
	queue := nq.path(r, "queue")
	partition, hasPartition := queryString(r.URL.Query(), "partition")
	np.note(partition)
	var res mq.ClearResult
	var queueFound, partitionFound bool
	var err error
	switch {
	case nq.nul: // an unknown queue
	case np.nul: // an unknown partition, whether or not the queue exists
		queueFound = true
	default:
		res, queueFound, partitionFound, err = s.read.ClearQueue(r.Context(), queue, partition)
	}
	switch {
	case err != nil:
		s.fail(w, r, err)
		return
	case !queueFound:
		writeError(w, http.StatusNotFound, "Queue not found")
		return
	case !partitionFound:
		writeError(w, http.StatusNotFound, "Partition not found")
		return
	}
	var echo *string
	if hasPartition && partition != "" { // an empty value names no partition: the whole queue
		echo = &partition
	}
	writeJSON(w, http.StatusOK, struct {
		Cleared           bool    `json:"cleared"`
		Queue             string  `json:"queue"`
		Partition         *string `json:"partition"`
		PartitionsCleared int64   `json:"partitionsCleared"`
		MessagesDeleted   int64   `json:"messagesDeleted"`
		UnconsumedDeleted int64   `json:"unconsumedDeleted"`
		Complete          bool    `json:"complete"`
	}{true, queue, echo, res.PartitionsCleared, res.MessagesDeleted, res.UnconsumedDeleted, res.Complete})
}

type groupActionJSON struct {
	ConsumerGroup string `json:"consumerGroup"`
	Action        string `json:"action"`
}

type groupSkipJSON struct {
	ConsumerGroup string `json:"consumerGroup"`
	Reason        string `json:"reason"`
}

// moveToDLQ serves POST /api/v1/messages/:partitionId/:transactionId/dlq.
func (s *Server) moveToDLQ(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ConsumerGroup json.RawMessage `json:"consumerGroup"`
		Error         json.RawMessage `json:"error"`
	}
	if !readOptionalObject(w, r, &body) {
		return
	}
	if msg := optName(body.ConsumerGroup, "consumerGroup", "consumerGroup"); msg != "" {
		writeError(w, http.StatusBadRequest, msg) // U+0000 or over 255 characters (docs/api/README.md §2.9)
		return
	}
	group, ok := optString(body.ConsumerGroup)
	if !ok {
		writeError(w, http.StatusBadRequest, "consumerGroup must be a string")
		return
	}
	reason, _ := asString(body.Error) // a non-string is ignored
	if reason == "" {
		reason = mq.DefaultMoveReason
	}
	if rs := []rune(reason); len(rs) > mq.MaxMoveReasonChars {
		reason = string(rs[:mq.MaxMoveReasonChars])
	}
	var n nameArgs
	pid, tx := n.path(r, "partitionId"), n.path(r, "transactionId")
	var groups []mq.GroupAction
	var found bool
	var err error
	if !n.nul {
		groups, found, err = s.read.MoveToDLQ(r.Context(), pid, tx, group, reason)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeGroupActions(w, found, pid, tx, groups, "Message not moved")
}

// deleteDLQEntry serves DELETE /api/v1/dlq/:dlqId.
func (s *Server) deleteDLQEntry(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	id := n.path(r, "dlqId")
	var existed bool
	var err error
	if !n.nul {
		existed, err = s.read.DeleteDLQEntry(r.Context(), id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Deleted bool   `json:"deleted"`
		DLQID   string `json:"dlqId"`
		Existed bool   `json:"existed"`
	}{true, id, existed})
}

type dlqSkipJSON struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// deleteDLQ serves POST /api/v1/dlq/delete.
func (s *Server) deleteDLQ(w http.ResponseWriter, r *http.Request) {
	var b dlqSelectionBody
	if !readOptionalObject(w, r, &b) {
		return
	}
	sel, msg := b.selection()
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	res, err := s.read.DeleteDLQ(r.Context(), sel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Deleted   int64         `json:"deleted"`
		Skipped   []dlqSkipJSON `json:"skipped"`
		Remaining int64         `json:"remaining"`
	}{res.Deleted, mapRows(res.Skipped, func(k mq.DLQSkip) dlqSkipJSON { return dlqSkipJSON(k) }), res.Remaining})
}

// readOptionalObject reads a body that may be empty (meaning {}) but is otherwise a JSON
// object, decoding its fields (raw JSON, checked one by one) into v; false once answered.
func readOptionalObject(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	var raw json.RawMessage
	if !decodeJSON(w, body, &raw) {
		return false
	}
	if !isObject(raw) {
		writeError(w, http.StatusBadRequest, "request body must be a JSON object")
		return false
	}
	_ = json.Unmarshal(raw, v) // fields are raw JSON
	return true
}

// Bounds of a DLQ selection (docs/api/admin-api.md §3.2).
const (
	maxDLQIDs      = 1000
	maxDLQSelected = 1000
)

// dlqSelectionBody is the selection part of the DLQ requeue and delete bodies.
type dlqSelectionBody struct {
	IDs    json.RawMessage `json:"ids"`
	Filter json.RawMessage `json:"filter"`
	Limit  json.RawMessage `json:"limit"`
}

// selection checks the body in the order of the reference's table; msg is the 400 text.
func (b *dlqSelectionBody) selection() (mq.DLQSelection, string) {
	hasIDs, hasFilter := !isNull(b.IDs), !isNull(b.Filter)
	if hasIDs == hasFilter {
		return mq.DLQSelection{}, "Either ids or filter is required"
	}
	if hasIDs {
		var raws []json.RawMessage
		if !isArray(b.IDs) || json.Unmarshal(b.IDs, &raws) != nil {
			return mq.DLQSelection{}, "ids must be an array of strings"
		}
		ids := make([]string, len(raws))
		for i, raw := range raws {
			var ok bool
			if ids[i], ok = asString(raw); !ok {
				return mq.DLQSelection{}, "ids must be an array of strings"
			}
		}
		if len(ids) > maxDLQIDs {
			return mq.DLQSelection{}, "ids exceeds 1000 entries"
		}
		return mq.DLQSelection{IDs: ids}, ""
	}
	f, msg := dlqBodyFilter(b.Filter)
	if msg != "" {
		return mq.DLQSelection{}, msg
	}
	limit := maxDLQSelected
	if !isNull(b.Limit) {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b.Limit)), 10, 64)
		if err != nil || n < 1 {
			return mq.DLQSelection{}, "limit must be a positive integer"
		}
		limit = int(min(n, maxDLQSelected))
	}
	return mq.DLQSelection{Filter: &f, Limit: limit}, ""
}

// dlqBodyFilter reads a selection's filter object: its string fields select as the DLQ
// listing's parameters do (an empty string filters nothing).
func dlqBodyFilter(raw json.RawMessage) (mq.DLQFilter, string) {
	var f mq.DLQFilter
	if !isObject(raw) {
		return f, "filter must be an object"
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	str := func(name string) (string, string) {
		v, ok := optString(fields[name])
		if !ok {
			return "", "filter." + name + " must be a string"
		}
		return v, ""
	}
	var msg string
	for _, x := range []struct {
		name string
		dst  *string
	}{{"queue", &f.Queue}, {"consumerGroup", &f.Group}, {"partition", &f.Partition}, {"error", &f.Error}} {
		if *x.dst, msg = str(x.name); msg != "" {
			return f, msg
		}
	}
	for _, x := range []struct {
		name string
		dst  **time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		v, msg := str(x.name)
		if msg != "" {
			return f, msg
		}
		if v == "" {
			continue
		}
		t, err := parseTimestamp(v)
		if err != nil {
			return f, "Invalid filter." + x.name + " timestamp"
		}
		if x.name == "to" && (len(v) <= 19 || v[19] != '.') {
			t = t.Add(time.Second - time.Microsecond) // a to without fractions covers its second
		}
		*x.dst = &t
	}
	return f, ""
}

// writeGroupActions answers a per-message operator action (move to the DLQ, retry): 404 when
// the message is not found, else what each consumer group did and which it skipped, with
// failText as the error when no group acted.
func writeGroupActions(w http.ResponseWriter, found bool, pid, tx string, groups []mq.GroupAction, failText string) {
	if !found {
		writeError(w, http.StatusNotFound, "Message not found")
		return
	}
	out := struct {
		Success        bool              `json:"success"`
		PartitionID    string            `json:"partitionId"`
		TransactionID  string            `json:"transactionId"`
		ConsumerGroups []groupActionJSON `json:"consumerGroups"`
		Skipped        []groupSkipJSON   `json:"skipped"`
		Error          string            `json:"error,omitempty"`
	}{PartitionID: pid, TransactionID: tx, ConsumerGroups: []groupActionJSON{}, Skipped: []groupSkipJSON{}}
	for _, g := range groups {
		if g.Action == mq.ActionSkipped {
			out.Skipped = append(out.Skipped, groupSkipJSON{g.Group, g.Reason})
		} else {
			out.ConsumerGroups = append(out.ConsumerGroups, groupActionJSON{g.Group, g.Action})
		}
	}
	out.Success = len(out.ConsumerGroups) > 0
	if !out.Success {
		out.Error = failText
	}
	writeJSON(w, http.StatusOK, out)
}
