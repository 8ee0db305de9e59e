package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

type ackJSON struct {
	TransactionID json.RawMessage `json:"transactionId"`
	PartitionID   json.RawMessage `json:"partitionId"`
	Status        json.RawMessage `json:"status"`
	ConsumerGroup json.RawMessage `json:"consumerGroup"`
	LeaseID       json.RawMessage `json:"leaseId"`
	Error         json.RawMessage `json:"error"`
}

type ackBatchJSON struct {
	ConsumerGroup   json.RawMessage `json:"consumerGroup"`
	Acknowledgments json.RawMessage `json:"acknowledgments"`
}

type ackResultJSON struct {
	Index            int     `json:"index"`
	TransactionID    string  `json:"transactionId"`
	Success          bool    `json:"success"`
	Error            *string `json:"error"`
	QueueName        *string `json:"queueName"`
	PartitionName    *string `json:"partitionName"`
	LeaseReleased    bool    `json:"leaseReleased"`
	DLQ              bool    `json:"dlq"`
	AlreadyCommitted bool    `json:"alreadyCommitted"`
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return
	}
	var a ackJSON
	if isObject(body) {
		_ = json.Unmarshal(body, &a) // fields are checked one by one below
	}
	tx, ok := asString(a.TransactionID)
	msg := ""
	switch {
	case !ok:
		msg = "transactionId is required"
	case tooLong(tx):
		msg = "transactionId exceeds 255 characters"
	}
	pid, ok := asString(a.PartitionID)
	if msg == "" && !ok {
		msg = "partitionId is required to ensure message uniqueness"
	}
	if msg == "" {
		msg = ackFieldsError(&a)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	s.applyAcks(w, r, []mq.AckItem{ackItem(tx, pid, a, "")})
}

func (s *Server) ackBatch(w http.ResponseWriter, r *http.Request) {
	items, ok := readBatch(w, r, parseAckBatchFast, parseAckBatch)
	if !ok {
		return
	}
	if len(items) == 0 {
		writeJSON(w, http.StatusOK, []ackResultJSON{})
		return
	}
	s.applyAcks(w, r, items)
}

// parseAckBatch validates every acknowledgment of a batch body; a non-empty message is the
// 400 answer for the first failure.
func parseAckBatch(body json.RawMessage) ([]mq.AckItem, string) {
	var b ackBatchJSON
	if !isObject(body) || json.Unmarshal(body, &b) != nil || !isArray(b.Acknowledgments) {
		return nil, "acknowledgments array is required"
	}
	if msg := optName(b.ConsumerGroup, "consumerGroup", "consumerGroup"); msg != "" {
		return nil, msg
	}
	group, _ := asString(b.ConsumerGroup)
	return parseEach(b.Acknowledgments, "acknowledgments array is required", ackNotObject, batchAck(group))
}

const ackNotObject = "Each acknowledgment must have a valid transactionId string"

// batchAck validates one acknowledgment of a batch whose request-level group is group.
func batchAck(group string) func(a *ackJSON) (mq.AckItem, string) {
	return func(a *ackJSON) (mq.AckItem, string) {
		tx, ok := asString(a.TransactionID)
		if !ok {
			return mq.AckItem{}, ackNotObject
		}
		if tooLong(tx) {
			return mq.AckItem{}, "transactionId exceeds 255 characters"
		}
		pid, ok := asString(a.PartitionID)
		if !ok {
			return mq.AckItem{}, "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
		}
		if msg := ackFieldsError(a); msg != "" {
			return mq.AckItem{}, msg
		}
		return ackItem(tx, pid, *a, group), ""
	}
}

// parseAckBatchFast reads an ack batch body in one pass (readRecords) when every
// acknowledgment is valid; ok=false leaves the body, and its answer, to the exact path.
func parseAckBatchFast(body []byte) ([]mq.AckItem, bool) {
	top, recs, ok := readRecords(body, "acknowledgments", []string{"consumerGroup"}, ackFields)
	if !ok || optName(top[0], "consumerGroup", "consumerGroup") != "" {
		return nil, false
	}
	group, _ := asString(top[0])
	parse := batchAck(group)
	items := make([]mq.AckItem, 0, len(recs)/len(ackFields))
	for f := 0; f < len(recs); f += len(ackFields) {
		a := ackJSON{TransactionID: recs[f], PartitionID: recs[f+1], Status: recs[f+2],
			ConsumerGroup: recs[f+3], LeaseID: recs[f+4], Error: recs[f+5]}
		item, msg := parse(&a)
		if msg != "" {
			return nil, false
		}
		items = append(items, item)
	}
	return items, true
}

// ackFields are the members of an acknowledgment, in readRecords' order.
var ackFields = []string{"transactionId", "partitionId", "status", "consumerGroup", "leaseId", "error"}

// ackFieldsError checks the optional names of an acknowledgment (docs/api/data-api.md §4): its
// consumerGroup (docs/api/README.md §2.9 length; U+0000 must not fall back to the default group) and its
// leaseId (U+0000 must not make the ack lease-less).
func ackFieldsError(a *ackJSON) string {
	if msg := optName(a.ConsumerGroup, "consumerGroup", "consumerGroup"); msg != "" {
		return msg
	}
	if nulString(a.LeaseID) {
		return "leaseId must not contain U+0000"
	}
	return ""
}

// ackItem builds a broker ack: the item's own non-empty group wins over the request's.
func ackItem(tx, pid string, a ackJSON, defGroup string) mq.AckItem {
	group, _ := asString(a.ConsumerGroup)
	if group == "" {
		group = defGroup
	}
	if group == "" {
		group = mq.QueueMode
	}
	var status *string
	if st, ok := asString(a.Status); ok {
		status = &st
	} else if !isNull(a.Status) {
		bogus := ""
		status = &bogus // a non-string status is treated as failed
	}
	lease, _ := asString(a.LeaseID)
	errMsg, _ := reasonString(a.Error) // never refused: cut to 4,096 characters
	return mq.AckItem{PartitionID: pid, TransactionID: tx, Group: group, Status: mq.NormalizeStatus(status),
		LeaseID: lease, Error: errMsg}
}

func (s *Server) applyAcks(w http.ResponseWriter, r *http.Request, items []mq.AckItem) {
	res, err := s.data.Ack(r.Context(), items)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]ackResultJSON, len(res))
	for i, x := range res {
		out[i] = ackResultJSON{Index: i, TransactionID: items[i].TransactionID, Success: x.Success, Error: x.Error,
			QueueName: x.Queue, PartitionName: x.Partition, LeaseReleased: x.LeaseReleased, DLQ: x.DLQ,
			AlreadyCommitted: x.AlreadyCommitted}
	}
	writeJSON(w, http.StatusOK, out)
}
