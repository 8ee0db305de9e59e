package httpapi

import (
	"net/http"
	"net/url"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Resources (docs/api/admin-api.md §1).

// countersJSON is the API reference's six-counter object; failed is reserved and always 0.
type countersJSON struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

func counters(c mq.Counters) countersJSON {
	return countersJSON{Total: c.Total, Pending: c.Pending(), Processing: c.Processing, Completed: c.Completed(),
		DeadLetter: c.DeadLetter}
}

// queueSummaryJSON is the queue row of both queue listings (docs/api/admin-api.md §1).
type queueSummaryJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Task       string `json:"task"`
	CreatedAt  msTime `json:"createdAt"`
	Partitions int64  `json:"partitions"`
	Messages   struct {
		Total      int64 `json:"total"`
		Pending    int64 `json:"pending"`
		Processing int64 `json:"processing"`
	} `json:"messages"`
	DeadLetter int64 `json:"deadLetter"`
	MaxTimeLag int64 `json:"maxTimeLag"`
	// Tenant is shown to the operator only, who lists every tenant's queues.
	Tenant *string `json:"tenant,omitempty"`
}

// Default page sizes of the resource listings (docs/api/admin-api.md, Listing parameters).
const (
	defaultQueueLimit       = 1000
	defaultStatusQueueLimit = 100
	defaultLabelLimit       = 1000
	defaultPartitionLimit   = 1000
)

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	s.queueListing(w, r, "createdAt", defaultQueueLimit)
}

// queueListing answers both queue listings (GET /api/v1/resources/queues, GET
// /api/v1/status/queues; dashboard M6), which differ only in their default sort and page.
func (s *Server) queueListing(w http.ResponseWriter, r *http.Request, defSort string, defLimit int) {
	q := r.URL.Query()
	key, desc, msg := listSort(q, mq.QueueSortKeys, defSort)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.QueueListFilter{Namespace: n.query(q, "namespace"), Task: n.query(q, "task"),
		Search: n.query(q, "search"), Sort: key, Desc: desc, Page: listPage(q, defLimit)}
	l := mq.QueueList{Queues: []mq.QueueSummary{}}
	var err error
	if !n.nul {
		l, err = s.read.ListQueues(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Queues     []queueSummaryJSON `json:"queues"`
		Total      int64              `json:"total"`
		Pagination pageJSON           `json:"pagination"`
		StatsAge   *int64             `json:"statsAge"`
	}{queueSummaries(l.Queues), l.Total, pagination(f.Page), s.statsAge(l.StatsAt)})
}

type partitionDetailJSON struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	CreatedAt     msTime       `json:"createdAt"`
	Stats         countersJSON `json:"stats"`
	OldestMessage msTime       `json:"oldestMessage"`
	NewestMessage msTime       `json:"newestMessage"`
	LastActivity  msTime       `json:"lastActivity"`
	MaxTimeLag    int64        `json:"maxTimeLag"`
}

type queueDetailJSON struct {
	ID         string                `json:"id"`
	Name       string                `json:"name"`
	Namespace  string                `json:"namespace"`
	Task       string                `json:"task"`
	CreatedAt  msTime                `json:"createdAt"`
	Options    mq.QueueOptions       `json:"options"`
	Partitions []partitionDetailJSON `json:"partitions"`
	// PartitionCount counts the partitions matching search; Partitions is one page of them.
	PartitionCount int64        `json:"partitionCount"`
	Pagination     pageJSON     `json:"pagination"`
	Totals         countersJSON `json:"totals"`
}

// partitionPage reads the paging, search and sort of a queue's partitions (docs/api/admin-api.md
// §1, §5.2; dashboard M7): by name ascending and 1,000 a page by default. msg is the 400 text.
func partitionPage(q url.Values) (mq.PartitionPage, string) {
	key, desc, msg := listSort(q, mq.QueuePartitionSortKeys, "name")
	return mq.PartitionPage{Search: queryFilter(q, "search"), Sort: key, Desc: desc,
		Page: listPage(q, defaultPartitionLimit)}, msg
}

// queueWithPartitions reads the queue of the path with one page of its partitions for both queue
// detail routes. A queue name holding U+0000 is an unknown queue; a search holding it matches
// no partition, and the queue still answers (nameArgs).
func (s *Server) queueWithPartitions(r *http.Request, f mq.PartitionPage) (mq.QueueStatus, bool, error) {
	var nq, ns nameArgs
	name := nq.path(r, "queue")
	if nq.nul {
		return mq.QueueStatus{}, false, nil
	}
	if ns.note(f.Search); ns.nul {
		f.Search, f.Page.Limit = "", 0
		q, found, err := s.read.StatusQueue(r.Context(), name, f)
		q.PartitionCount = 0
		return q, found, err
	}
	return s.read.StatusQueue(r.Context(), name, f)
}

// queueDetail serves GET /api/v1/resources/queues/:queue (dashboard M7, M9).
func (s *Server) queueDetail(w http.ResponseWriter, r *http.Request) {
	f, msg := partitionPage(r.URL.Query())
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	q, found, err := s.queueWithPartitions(r, f)
	if !s.queueFound(w, r, found, err) {
		return
	}
	out := queueDetailJSON{ID: q.ID, Name: q.Name, Namespace: q.Namespace, Task: q.Task, CreatedAt: msTime(q.CreatedAt),
		Options: q.Options, Partitions: make([]partitionDetailJSON, len(q.Partitions)), PartitionCount: q.PartitionCount,
		Pagination: pagination(f.Page), Totals: counters(q.Totals)}
	for i, p := range q.Partitions {
		out.Partitions[i] = partitionDetailJSON{ID: p.ID, Name: p.Name, CreatedAt: msTime(p.CreatedAt),
			Stats: counters(p.Counters), OldestMessage: msOpt(p.Oldest), NewestMessage: msOpt(p.Newest),
			LastActivity: msOpt(p.LastActivity), MaxTimeLag: p.MaxTimeLag}
	}
	writeJSON(w, http.StatusOK, out)
}

type deleteQueueJSON struct {
	Deleted bool   `json:"deleted"`
	Queue   string `json:"queue"`
	Existed bool   `json:"existed"`
}

func (s *Server) deleteQueue(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	name := n.path(r, "queue")
	var existed bool
	var err error
	if !n.nul {
		existed, err = s.read.DeleteQueue(r.Context(), name)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deleteQueueJSON{Deleted: true, Queue: name, Existed: existed})
}

// labelJSON is one namespace or task; exactly one of the two names is set.
type labelJSON struct {
	Namespace  *string `json:"namespace,omitempty"`
	Task       *string `json:"task,omitempty"`
	Queues     int64   `json:"queues"`
	Partitions int64   `json:"partitions"`
	Messages   struct {
		Total   int64 `json:"total"`
		Pending int64 `json:"pending"`
	} `json:"messages"`
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	s.listLabels(w, r, "namespaces")
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) { s.listLabels(w, r, "tasks") }

// listLabels answers the namespace or task summary under the key "namespaces" or "tasks":
// searched, sorted and paged in the database, with total (docs/api/admin-api.md §1, "Listing
// parameters").
func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, key string) {
	byTask := key == "tasks"
	q := r.URL.Query()
	sort, desc, msg := listSort(q, mq.LabelSortKeys, "name")
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.LabelFilter{ByTask: byTask, Search: n.query(q, "search"), Sort: sort, Desc: desc,
		Page: listPage(q, defaultLabelLimit)}
	l := mq.LabelList{Labels: []mq.LabelSummary{}}
	var err error
	if !n.nul {
		l, err = s.read.LabelSummaries(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pagination": pagination(f.Page), "total": l.Total, key: mapRows(l.Labels, func(l mq.LabelSummary) (o labelJSON) {
		if byTask {
			o.Task = &l.Label
		} else {
			o.Namespace = &l.Label
		}
		o.Queues, o.Partitions, o.Messages.Total, o.Messages.Pending = l.Queues, l.Partitions, l.Total, l.Pending
		return o
	})})
}

type lagStatsJSON struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
}

type overviewJSON struct {
	Queues     int64        `json:"queues"`
	Partitions int64        `json:"partitions"`
	Namespaces int64        `json:"namespaces"`
	Tasks      int64        `json:"tasks"`
	Messages   countersJSON `json:"messages"`
	Lag        struct {
		Time   lagStatsJSON `json:"time"`
		Offset lagStatsJSON `json:"offset"`
	} `json:"lag"`
	Throughput struct {
		IngestedPerSecond  float64 `json:"ingestedPerSecond"`
		ProcessedPerSecond float64 `json:"processedPerSecond"`
	} `json:"throughput"`
	Timestamp msTime `json:"timestamp"`
	StatsAge  *int64 `json:"statsAge"` // null before the stats job first ran, as on the listings
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	o, err := s.read.Overview(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := overviewJSON{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces, Tasks: o.Tasks,
		Messages: counters(o.Counters), Timestamp: msTime(time.Now())}
	out.Lag.Time, out.Lag.Offset = lagStats(o.TimeLag), lagStats(o.OffsetLag)
	// Counters and lag come from the stats job (docs/api/admin-api.md §1, "Freshness"), so
	// statsAge says how old they are; processing throughput needs the stats job's per-minute
	// ack counts and reads 0 until they exist (docs/decisions.md).
	out.StatsAge = s.statsAge(o.StatsAt)
	out.Throughput.IngestedPerSecond = float64(o.IngestedLastMinute) / 60
	writeJSON(w, http.StatusOK, out)
}

func lagStats(l mq.Lag) lagStatsJSON { return lagStatsJSON(l) }
