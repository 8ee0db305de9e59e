package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

// Messages and the DLQ (docs/api/admin-api.md §2, §3).

// Listing defaults. The message listing's from and to default to the last hour, on the
// broker's clock, in SQL.
const (
	defaultMessageLimit = 200
	defaultDLQLimit     = 100
)

// messageStatuses are the values the message listing filters on.
var messageStatuses = map[string]bool{"pending": true, "processing": true, "completed": true, "dead_letter": true}

type busStatusJSON struct {
	ConsumedBy  int64 `json:"consumedBy"`
	TotalGroups int64 `json:"totalGroups"`
}

type messageModeJSON struct {
	HasQueueMode     bool   `json:"hasQueueMode"`
	BusGroupsCount   int64  `json:"busGroupsCount"`
	ConsumedByGroups *int64 `json:"consumedByGroups,omitempty"` // detail only
	Type             string `json:"type"`
}

// messageMode names the kind of consumers: queue mode only, named groups only, both, none.
func messageMode(hasQueueMode bool, busGroups int64) messageModeJSON {
	m := messageModeJSON{HasQueueMode: hasQueueMode, BusGroupsCount: busGroups, Type: "none"}
	switch {
	case hasQueueMode && busGroups > 0:
		m.Type = "hybrid"
	case hasQueueMode:
		m.Type = "queue"
	case busGroups > 0:
		m.Type = "bus"
	}
	return m
}

// storedMessageJSON holds the fields the listing and the detail share.
type storedMessageJSON struct {
	ID            string  `json:"id"`
	TransactionID string  `json:"transactionId"`
	PartitionID   string  `json:"partitionId"`
	QueuePath     string  `json:"queuePath"`
	Queue         string  `json:"queue"`
	Partition     string  `json:"partition"`
	Namespace     string  `json:"namespace"`
	Task          string  `json:"task"`
	Status        string  `json:"status"`
	TraceID       *string `json:"traceId"`
	ProducerSub   *string `json:"producerSub"`
	CreatedAt     msTime  `json:"createdAt"`
	LeaseExpires  msTime  `json:"leaseExpiresAt"`
}

func storedMessage(m mq.StoredMessage) storedMessageJSON {
	return storedMessageJSON{ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID,
		QueuePath: m.Queue + "/" + m.Partition, Queue: m.Queue, Partition: m.Partition, Namespace: m.Namespace,
		Task: m.Task, Status: m.Status, TraceID: m.TraceID, ProducerSub: m.ProducerSub,
		CreatedAt: msTime(m.CreatedAt), LeaseExpires: msOpt(m.LeaseExpiresAt)}
}

type listedMessageJSON struct {
	storedMessageJSON
	QueueStatus   *string       `json:"queueStatus"`
	BusStatus     busStatusJSON `json:"busStatus"`
	QueuePriority int           `json:"queuePriority"`
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := queryFilter(q, "status")
	if _, set := queryString(q, "status"); set && !messageStatuses[status] {
		writeError(w, http.StatusBadRequest, "Invalid status: "+status)
		return
	}
	traceID := queryFilter(q, "traceId")
	if traceID != "" {
		if traceID = mq.CanonicalUUID(traceID); traceID == "" {
			writeError(w, http.StatusBadRequest, "traceId must be a UUID")
			return
		}
	}
	from, to, msg := timeRange(q)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	ns, given := queryString(q, "ns")
	if !given {
		ns = queryFilter(q, "namespace") // the alias; ns wins when both are given
	}
	f := mq.MessageFilter{Queue: n.query(q, "queue"), Partition: n.query(q, "partition"),
		Namespace: n.note(ns), Task: n.query(q, "task"), Status: status, From: from, To: to,
		TransactionID: n.query(q, "transactionId"), TraceID: traceID, Page: listPage(q, defaultMessageLimit)}
	var msgs []mq.ListedMessage
	var err error
	if !n.nul {
		msgs, err = s.read.ListMessages(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mode := messageMode(false, 0)
	if len(msgs) > 0 {
		mode = messageMode(msgs[0].HasQueueMode, msgs[0].BusGroups) // the same on every row
	}
	out := mapRows(msgs, func(m mq.ListedMessage) listedMessageJSON {
		return listedMessageJSON{storedMessageJSON: storedMessage(m.StoredMessage), QueueStatus: m.QueueStatus,
			BusStatus: busStatusJSON{ConsumedBy: m.ConsumedBy, TotalGroups: m.Groups}, QueuePriority: m.Priority}
	})
	writeJSON(w, http.StatusOK, struct {
		Messages []listedMessageJSON `json:"messages"`
		Mode     messageModeJSON     `json:"mode"`
	}{out, mode})
}

type queueConfigJSON struct {
	LeaseTime  int `json:"leaseTime"`
	RetryLimit int `json:"retryLimit"`
	RetryDelay int `json:"retryDelay"`
	TTL        int `json:"ttl"`
	Priority   int `json:"priority"`
}

type messageConsumerJSON struct {
	Name           string `json:"name"`
	Consumed       bool   `json:"consumed"`
	LeaseExpiresAt msTime `json:"leaseExpiresAt"`
}

type messageDetailJSON struct {
	storedMessageJSON
	Payload        json.RawMessage       `json:"payload"`
	IsEncrypted    bool                  `json:"isEncrypted"`
	ErrorMessage   *string               `json:"errorMessage"`
	RetryCount     int                   `json:"retryCount"`
	QueueConfig    queueConfigJSON       `json:"queueConfig"`
	Mode           messageModeJSON       `json:"mode"`
	ConsumerGroups []messageConsumerJSON `json:"consumerGroups"`
}

func (s *Server) messageDetail(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	pid, tx := n.path(r, "partitionId"), n.path(r, "transactionId")
	var d mq.MessageDetail
	var found bool
	var err error
	if !n.nul {
		d, found, err = s.read.MessageDetail(r.Context(), pid, tx)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Message not found")
		return
	}
	out := messageDetailJSON{storedMessageJSON: storedMessage(d.StoredMessage), Payload: d.Payload,
		IsEncrypted: d.Encrypted, ErrorMessage: d.ErrorMessage, RetryCount: d.RetryCount,
		QueueConfig:    queueConfigJSON{d.LeaseTime, d.RetryLimit, d.RetryDelay, d.TTL, d.Priority},
		ConsumerGroups: make([]messageConsumerJSON, len(d.Consumers))}
	var hasQueueMode bool
	var bus, consumed int64
	for i, c := range d.Consumers {
		out.ConsumerGroups[i] = messageConsumerJSON{Name: c.Group, Consumed: c.Consumed, LeaseExpiresAt: msOpt(c.LeaseExpiresAt)}
		if c.Group == mq.QueueMode {
			hasQueueMode = true
		} else {
			bus++
		}
		if c.Consumed {
			consumed++
		}
	}
	out.Mode = messageMode(hasQueueMode, bus)
	out.Mode.ConsumedByGroups = &consumed
	writeJSON(w, http.StatusOK, out)
}

type deleteMessageJSON struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Message       string `json:"message"`
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	pid, tx := n.path(r, "partitionId"), n.path(r, "transactionId")
	var found bool
	var err error
	if !n.nul {
		found, err = s.read.DeleteMessage(r.Context(), pid, tx)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := deleteMessageJSON{Success: found, PartitionID: pid, TransactionID: tx, Message: "Message deleted successfully"}
	if !found {
		out.Message = "Message not found"
	}
	writeJSON(w, http.StatusOK, out)
}

type dlqEntryJSON struct {
	DLQID         string          `json:"dlqId"`
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	TraceID       *string         `json:"traceId"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     msTime          `json:"createdAt"`
	FailedAt      msTime          `json:"failedAt"`
	MessageStored bool            `json:"messageStored"`
}

func (s *Server) listDLQ(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to, msg := timeRange(q)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.DLQFilter{Queue: n.query(q, "queue"), Group: n.query(q, "consumerGroup"),
		Partition: n.query(q, "partition"), Error: n.query(q, "error"), From: from, To: to, Page: listPage(q, defaultDLQLimit)}
	var entries []mq.DLQEntry
	var total int64
	var err error
	if !n.nul {
		entries, total, err = s.read.ListDLQ(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := mapRows(entries, func(e mq.DLQEntry) dlqEntryJSON {
		return dlqEntryJSON{DLQID: e.DLQID, ID: e.MessageID, TransactionID: e.TransactionID, PartitionID: e.PartitionID,
			Queue: e.Queue, Partition: e.Partition, ConsumerGroup: e.Group, ErrorMessage: e.ErrorMessage,
			RetryCount: e.RetryCount, Data: e.Payload, TraceID: e.TraceID, ProducerSub: e.ProducerSub,
			CreatedAt: msTime(e.CreatedAt), FailedAt: msTime(e.FailedAt), MessageStored: e.MessageStored}
	})
	writeJSON(w, http.StatusOK, struct {
		Messages   []dlqEntryJSON `json:"messages"`
		Total      int64          `json:"total"`
		Pagination pageJSON       `json:"pagination"`
	}{out, total, pagination(f.Page)})
}
