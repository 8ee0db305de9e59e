package httpapi

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/queen-go/queen/internal/mq"
)

type configureJSON struct {
	Queue     json.RawMessage `json:"queue"`
	Namespace json.RawMessage `json:"namespace"`
	Task      json.RawMessage `json:"task"`
	Options   json.RawMessage `json:"options"`
}

type configuredJSON struct {
	Configured  bool            `json:"configured"`
	QueueID     string          `json:"queueId"`
	PartitionID string          `json:"partitionId"`
	Queue       string          `json:"queue"`
	Namespace   string          `json:"namespace"`
	Task        string          `json:"task"`
	Options     mq.QueueOptions `json:"options"`
}

func (s *Server) configure(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return
	}
	var c configureJSON
	if isObject(body) {
		_ = json.Unmarshal(body, &c)
	}
	name, ok := asString(c.Queue)
	if !ok || name == "" {
		// "" too: a queue of that name could not be addressed by any path (docs/api/README.md §2.9).
		writeError(w, http.StatusBadRequest, "queue is required")
		return
	}
	if tooLong(name) {
		writeError(w, http.StatusBadRequest, "queue exceeds 255 characters")
		return
	}
	// Checked in the order of docs/api/data-api.md §1's table: queue, namespace, task, options.
	ns, msg := labelField(c.Namespace, "namespace")
	var task *string
	if msg == "" {
		task, msg = labelField(c.Task, "task")
	}
	var opts mq.QueueOptions
	if msg == "" {
		opts, msg = parseQueueOptions(c.Options)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	s.configureQueue(w, r, name, ns, task, opts)
}

// labelField reads the namespace or task of a configure body (docs/api/data-api.md §1): a non-string
// value is ignored (nil: the derived label applies), a string over 255 characters or holding
// U+0000 is refused (docs/api/README.md §2.9: it must not fall back to the derived label).
func labelField(raw json.RawMessage, field string) (*string, string) {
	if msg := optName(raw, field, field); msg != "" {
		return nil, msg
	}
	if v, ok := asString(raw); ok {
		return &v, ""
	}
	return nil, ""
}

// configureQueue runs a validated configure and answers it.
func (s *Server) configureQueue(w http.ResponseWriter, r *http.Request, name string, ns, task *string, opts mq.QueueOptions) {
	qid, pid, nsv, taskv, err := s.data.Configure(r.Context(), name, ns, task, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, configuredJSON{Configured: true, QueueID: qid, PartitionID: pid, Queue: name,
		Namespace: nsv, Task: taskv, Options: opts})
}

// parseQueueOptions reads the options of mq.OptionTable over their defaults (docs/api/concepts.md
// §2.2): integers ≥ 0 and booleans; other names are ignored. The first invalid one in table
// order is reported.
func parseQueueOptions(raw json.RawMessage) (mq.QueueOptions, string) {
	opts := mq.DefaultQueueOptions()
	if isNull(raw) {
		return opts, ""
	}
	var m map[string]json.RawMessage
	if !isObject(raw) || json.Unmarshal(raw, &m) != nil {
		return opts, "options must be an object"
	}
	for _, o := range mq.OptionTable {
		v, present := m[o.Key]
		if !present || isNull(v) {
			continue
		}
		if o.IsBool() {
			if json.Unmarshal(v, o.Bool(&opts)) != nil || (jsonKind(v) != 't' && jsonKind(v) != 'f') {
				return opts, "Invalid value for option " + o.Key
			}
			continue
		}
		var f float64
		if json.Unmarshal(v, &f) != nil || jsonKind(v) == '"' || f < 0 || f != math.Trunc(f) || f > mq.MaxOptionValue {
			return opts, "Invalid value for option " + o.Key
		}
		*o.Int(&opts) = int(f)
	}
	return opts, ""
}
