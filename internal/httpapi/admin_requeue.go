package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// Giving dead-lettered messages another chance: POST /api/v1/dlq/requeue
// (docs/api/admin-api.md §3.2) and POST /api/v1/messages/:partitionId/:transactionId/retry (§2.4).

// registerAdminRequeue adds the requeue and retry routes with their levels (docs/api/README.md §3).
func (s *Server) registerAdminRequeue(r *Router) {
	r.Handle(http.MethodPost, "/api/v1/dlq/requeue", LevelReadWrite, s.requeueDLQ)
	r.Handle(http.MethodPost, "/api/v1/messages/:partitionId/:transactionId/retry", LevelReadWrite, s.retryMessage)
}

// maxRequeueName bounds toQueue and toPartition (docs/api/admin-api.md §3.2).
const maxRequeueName = 255

// requeueBody is the body of POST /api/v1/dlq/requeue: a DLQ selection, the mode and the
// copy target, each field raw JSON checked in the order of the reference's table.
type requeueBody struct {
	dlqSelectionBody
	Mode        json.RawMessage `json:"mode"`
	ToQueue     json.RawMessage `json:"toQueue"`
	ToPartition json.RawMessage `json:"toPartition"`
}

// request validates the body; msg is the 400 text.
func (b *requeueBody) request() (mq.DLQRequeueRequest, string) {
	var req mq.DLQRequeueRequest
	sel, msg := b.selection()
	if msg != "" {
		return req, msg
	}
	req.Selection = sel
	req.Mode = mq.RequeueRedeliver
	if !isNull(b.Mode) {
		m, ok := asString(b.Mode)
		if !ok || (m != mq.RequeueRedeliver && m != mq.RequeueCopy) {
			if !ok {
				m = string(b.Mode) // a non-string is named as sent
			}
			return req, "Invalid mode: " + m
		}
		req.Mode = m
	}
	if req.Mode != mq.RequeueCopy {
		return req, "" // toQueue and toPartition are copy-only: ignored
	}
	// U+0000 cannot be stored in a name (docs/api/README.md §2.9).
	for _, f := range []struct {
		raw  json.RawMessage
		name string
	}{{b.ToQueue, "toQueue"}, {b.ToPartition, "toPartition"}} {
		if nulString(f.raw) {
			return req, f.name + " must not contain U+0000"
		}
	}
	q, ok := optString(b.ToQueue)
	if !ok || q == "" {
		return req, "toQueue is required for mode copy"
	}
	if len([]rune(q)) > maxRequeueName {
		return req, "toQueue exceeds 255 characters"
	}
	p, _ := optString(b.ToPartition) // not a string: the default, each entry's own partition
	if len([]rune(p)) > maxRequeueName {
		return req, "toPartition exceeds 255 characters"
	}
	req.ToQueue, req.ToPartition = q, p
	return req, ""
}

type dlqCopyJSON struct {
	DLQID         string `json:"dlqId"`
	MessageID     string `json:"messageId"`
	TransactionID string `json:"transactionId"`
	QueueName     string `json:"queueName"`
	PartitionID   string `json:"partitionId"`
}

// requeueDLQ serves POST /api/v1/dlq/requeue.
func (s *Server) requeueDLQ(w http.ResponseWriter, r *http.Request) {
	var b requeueBody
	if !readOptionalObject(w, r, &b) {
		return
	}
	req, msg := b.request()
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	req.ProducerSub = producerSub(r)
	res, err := s.read.RequeueDLQ(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Mode      string         `json:"mode"`
		Requeued  int64          `json:"requeued"`
		Skipped   []dlqSkipJSON  `json:"skipped"`
		Remaining int64          `json:"remaining"`
		Copies    *[]dlqCopyJSON `json:"copies,omitempty"`
	}{Mode: req.Mode, Requeued: res.Requeued, Remaining: res.Remaining,
		Skipped: mapRows(res.Skipped, func(k mq.DLQSkip) dlqSkipJSON { return dlqSkipJSON(k) })}
	if req.Mode == mq.RequeueCopy {
		copies := mapRows(res.Copies, func(c mq.DLQCopy) dlqCopyJSON { return dlqCopyJSON(c) })
		out.Copies = &copies
	}
	writeJSON(w, http.StatusOK, out)
}

// retryMessage serves POST /api/v1/messages/:partitionId/:transactionId/retry.
func (s *Server) retryMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ConsumerGroup json.RawMessage `json:"consumerGroup"`
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
	var n nameArgs
	pid, tx := n.path(r, "partitionId"), n.path(r, "transactionId")
	var groups []mq.GroupAction
	var found bool
	var err error
	if !n.nul {
		groups, found, err = s.read.RetryMessage(r.Context(), pid, tx, group)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeGroupActions(w, found, pid, tx, groups, "Message is neither dead-lettered nor waiting for a retry")
}
