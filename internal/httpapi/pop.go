package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

func (s *Server) popQueue(w http.ResponseWriter, r *http.Request) {
	s.pop(w, r, mq.PopRequest{Queue: PathParam(r, "queue")})
}

func (s *Server) popPartition(w http.ResponseWriter, r *http.Request) {
	s.pop(w, r, mq.PopRequest{Queue: PathParam(r, "queue"), Partition: PathParam(r, "partition")})
}

func (s *Server) popNamespace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	if ns == "" && task == "" {
		writeError(w, http.StatusBadRequest, "namespace or task is required")
		return
	}
	s.pop(w, r, mq.PopRequest{Namespace: ns, Task: task})
}

// pop validates the shared query parameters (docs/api/data-api.md §3.1), runs the pop and answers 200
// with the messages or 204 when there are none.
func (s *Server) pop(w http.ResponseWriter, r *http.Request, req mq.PopRequest) {
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
	// Capped before the conversion: a huge value would overflow time.Duration and wrap.
	timeout := time.Duration(queryIntMax(q, "timeout", -1, maxPopTimeoutMs)) * time.Millisecond
	if timeout < 0 {
		timeout = s.cfg.DefaultTimeout
	}
	req.Deadline = arrival.Add(min(timeout, maxPopTimeout))
	res, err := s.data.Pop(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(res.Messages) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writePop(w, res)
}

func (s *Server) popParams(q url.Values, req *mq.PopRequest) string {
	// The maxima keep the values inside PostgreSQL's int4 (docs/api/README.md §2.9).
	req.Batch = queryIntMax(q, "batch", s.cfg.DefaultBatch, maxPopBatch)
	if req.Batch < 1 {
		req.Batch = min(s.cfg.DefaultBatch, maxPopBatch)
	}
	req.Partitions = max(queryIntMax(q, "partitions", 1, maxPopPartitions), 1)
	req.Wait = queryBool(q, "wait")
	req.AutoAck = queryBool(q, "autoAck")
	req.Group, _ = queryString(q, "consumerGroup") // its length: checkRequestText
	mode, _ := queryString(q, "subscriptionMode")
	normal, ok := mq.NormalizeSubscriptionMode(mode)
	if !ok {
		return "Invalid subscriptionMode: " + mode
	}
	req.SubscriptionMode = normal
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
