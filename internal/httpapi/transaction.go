package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

type txnBody struct {
	Operations     json.RawMessage `json:"operations"`
	RequiredLeases json.RawMessage `json:"requiredLeases"`
}

// txnOpJSON holds every field an operation may carry: a flat push, a nested push (Items) or
// an ack. A nested item is decoded into the same shape.
type txnOpJSON struct {
	Type  json.RawMessage `json:"type"`
	Items json.RawMessage `json:"items"`
	txnItemJSON
	ackJSON
}

type txnItemJSON struct {
	Queue     json.RawMessage `json:"queue"`
	Partition json.RawMessage `json:"partition"`
	Payload   json.RawMessage `json:"payload"`
	Data      json.RawMessage `json:"data"`
	TraceID   json.RawMessage `json:"traceId"`
}

type txnResultJSON struct {
	Index            int              `json:"index"`
	Type             string           `json:"type"`
	Success          bool             `json:"success"`
	TransactionID    string           `json:"transactionId"`
	Error            *json.RawMessage `json:"error,omitempty"` // null on acks, absent on pushes
	DLQ              *bool            `json:"dlq,omitempty"`
	AlreadyCommitted *bool            `json:"alreadyCommitted,omitempty"`
	MessageID        string           `json:"messageId,omitempty"`
	QueueName        *string          `json:"queueName,omitempty"` // on pushes only: acks have none
	PartitionID      string           `json:"partitionId,omitempty"`
	Duplicate        bool             `json:"duplicate,omitempty"`
}

type txnAnswerJSON struct {
	TransactionID string          `json:"transactionId"`
	Success       bool            `json:"success"`
	Error         string          `json:"error,omitempty"`
	Results       []txnResultJSON `json:"results"`
}

// jsonNull is a JSON null member value (a *json.RawMessage that omitempty keeps).
var jsonNull = json.RawMessage("null")

func (s *Server) transaction(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return
	}
	entries, required, msg := parseTransaction(body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	out, err := s.data.Transaction(r.Context(), entries, required, producerSub(r))
	if limitRefused(w, err) {
		return // past a tenant limit: nothing was written
	}
	if err != nil {
		text := mq.TextUnavailable
		switch {
		case errors.Is(err, mq.ErrBusy):
			// Load, not an outage (docs/api/operations.md §9.7); the outcome may be unknown all the same.
			text = mq.TextTimedOut
		case !errors.Is(err, mq.ErrUnavailable):
			s.log.Error("transaction failed", "err", err)
		}
		// The outcome may be unknown: the API reference's 500 (docs/api/transaction.md §7).
		writeJSON(w, http.StatusInternalServerError, txnAnswerJSON{TransactionID: out.ID,
			Error: text, Results: []txnResultJSON{}})
		return
	}
	if out.Rollback != "" {
		writeJSON(w, http.StatusOK, txnAnswerJSON{TransactionID: out.ID, Error: out.Rollback, Results: []txnResultJSON{}})
		return
	}
	res := make([]txnResultJSON, len(out.Results))
	for i, x := range out.Results {
		e := txnResultJSON{Index: x.Index, Type: x.Kind, Success: true, TransactionID: x.TransactionID}
		if x.Kind == "ack" {
			dlq, already := x.DLQ, x.AlreadyCommitted
			e.Error, e.DLQ, e.AlreadyCommitted = &jsonNull, &dlq, &already
		} else {
			e.MessageID, e.QueueName, e.PartitionID, e.Duplicate = x.MessageID, &x.Queue, x.PartitionID, x.Duplicate
		}
		res[i] = e
	}
	writeJSON(w, http.StatusOK, txnAnswerJSON{TransactionID: out.ID, Success: true, Results: res})
}
