package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/broker"
)

type popMessageJSON struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       *string         `json:"traceId"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	RetryCount    int             `json:"retryCount"`
}

type popJSON struct {
	Success           bool             `json:"success"`
	Queue             string           `json:"queue"`
	Partition         string           `json:"partition"`
	PartitionID       string           `json:"partitionId"`
	LeaseID           string           `json:"leaseId"`
	ConsumerGroup     string           `json:"consumerGroup"`
	PartitionsClaimed int              `json:"partitionsClaimed"`
	Messages          []popMessageJSON `json:"messages"`
}

func (s *Server) popQueue(w http.ResponseWriter, r *http.Request) {
	s.pop(w, r, broker.PopRequest{Queue: PathParam(r, "queue")})
}

func (s *Server) popPartition(w http.ResponseWriter, r *http.Request) {
	s.pop(w, r, broker.PopRequest{Queue: PathParam(r, "queue"), Partition: PathParam(r, "partition")})
}

func (s *Server) popNamespace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	if ns == "" && task == "" {
		writeError(w, http.StatusBadRequest, "namespace or task is required")
		return
	}
	s.pop(w, r, broker.PopRequest{Namespace: ns, Task: task})
}

// pop validates the shared query parameters (data-api.md §3.1), runs the pop and answers 200
// with the messages or 204 when there are none.
func (s *Server) pop(w http.ResponseWriter, r *http.Request, req broker.PopRequest) {
	arrival := time.Now()
	q := r.URL.Query()
	if msg := s.popParams(q, &req); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if strings.ContainsRune(req.Queue+req.Partition+req.Group+req.Namespace+req.Task, 0) {
		// Nothing can be named with U+0000 (see asString): there is nothing to deliver.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	timeout := time.Duration(queryInt(q, "timeout", -1)) * time.Millisecond
	if timeout < 0 {
		timeout = s.cfg.DefaultTimeout
	}
	req.Deadline = arrival.Add(min(timeout, maxPopTimeout))
	res, err := s.b.Pop(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(res.Messages) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, popAnswer(res))
}

// popAnswer is the 200 answer of a pop that delivered at least one message; the top-level
// queue and partition are the first message's.
func popAnswer(res broker.PopResult) popJSON {
	out := popJSON{Success: true, LeaseID: res.LeaseID, ConsumerGroup: res.Group, PartitionsClaimed: res.Claimed,
		Messages: make([]popMessageJSON, len(res.Messages))}
	first := res.Messages[0]
	out.Queue, out.Partition, out.PartitionID = first.Queue, first.Partition, first.PartitionID
	for i, m := range res.Messages {
		out.Messages[i] = popMessageJSON{ID: m.ID, TransactionID: m.TransactionID, TraceID: m.TraceID,
			Data: m.Payload, ProducerSub: m.ProducerSub, CreatedAt: formatMicro(m.CreatedAt),
			PartitionID: m.PartitionID, Partition: m.Partition, Queue: m.Queue, LeaseID: res.LeaseID,
			ConsumerGroup: res.Group, RetryCount: m.RetryCount}
	}
	return out
}

func (s *Server) popParams(q url.Values, req *broker.PopRequest) string {
	req.Batch = queryInt(q, "batch", s.cfg.DefaultBatch)
	if req.Batch < 1 {
		req.Batch = s.cfg.DefaultBatch
	}
	req.Partitions = max(queryInt(q, "partitions", 1), 1)
	req.Wait = queryBool(q, "wait")
	req.AutoAck = queryBool(q, "autoAck")
	req.Group, _ = queryString(q, "consumerGroup")
	if tooLong(req.Group) {
		return "consumerGroup exceeds 255 characters"
	}
	mode, _ := queryString(q, "subscriptionMode")
	switch mode {
	case "", "all", "new", "new-only":
		req.SubscriptionMode = mode
	default:
		return "Invalid subscriptionMode: " + mode
	}
	from, _ := queryString(q, "subscriptionFrom")
	if from != "" && from != "now" {
		t, err := parseTimestamp(from)
		if err != nil {
			return "Invalid subscriptionFrom: " + from
		}
		req.From = &t
	}
	req.SubscriptionFrom = from
	return ""
}
