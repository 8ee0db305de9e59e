package httpapi

import (
	"net/http"
	"net/url"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// registerAdmin adds the resource, message, DLQ, trace and consumer-group routes
// (docs/api/admin-api.md §1-§4, §7) with their access levels (docs/api/README.md §3).
func (s *Server) registerAdmin(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/resources/queues", LevelReadOnly, s.listQueues)
	r.Handle(http.MethodGet, "/api/v1/resources/queues/:queue", LevelReadOnly, s.queueDetail)
	r.Handle(http.MethodDelete, "/api/v1/resources/queues/:queue", LevelAdmin, s.deleteQueue)
	r.Handle(http.MethodGet, "/api/v1/resources/namespaces", LevelReadOnly, s.listNamespaces)
	r.Handle(http.MethodGet, "/api/v1/resources/tasks", LevelReadOnly, s.listTasks)
	r.Handle(http.MethodGet, "/api/v1/resources/overview", LevelReadOnly, s.overview)

	r.Handle(http.MethodGet, "/api/v1/messages", LevelReadOnly, s.listMessages)
	r.Handle(http.MethodGet, "/api/v1/messages/:partitionId/:transactionId", LevelReadOnly, s.messageDetail)
	r.Handle(http.MethodDelete, "/api/v1/messages/:partitionId/:transactionId", LevelReadWrite, s.deleteMessage)
	r.Handle(http.MethodGet, "/api/v1/dlq", LevelReadOnly, s.listDLQ)

	r.Handle(http.MethodPost, "/api/v1/traces", LevelReadWrite, s.addTrace)
	r.Handle(http.MethodGet, "/api/v1/traces/names", LevelReadOnly, s.traceNames)
	r.Handle(http.MethodGet, "/api/v1/traces/by-name/:traceName", LevelReadOnly, s.tracesByName)
	r.Handle(http.MethodGet, "/api/v1/traces/:partitionId/:transactionId", LevelReadOnly, s.messageTraces)

	const group = "/api/v1/consumer-groups/:group"
	r.Handle(http.MethodGet, "/api/v1/consumer-groups", LevelReadOnly, s.listConsumerGroups)
	r.Handle(http.MethodGet, "/api/v1/consumer-groups/lagging", LevelReadOnly, s.laggingConsumers)
	r.Handle(http.MethodGet, group, LevelReadOnly, s.consumerGroupDetail)
	r.Handle(http.MethodDelete, group, LevelAdmin, s.deleteConsumerGroup)
	r.Handle(http.MethodDelete, group+"/queues/:queue", LevelAdmin, s.deleteConsumerGroup)
	r.Handle(http.MethodPost, group+"/subscription", LevelReadWrite, s.updateSubscription)
	r.Handle(http.MethodPost, group+"/queues/:queue/seek", LevelReadWrite, s.seekQueue)
	r.Handle(http.MethodPost, group+"/queues/:queue/partitions/:partition/seek", LevelReadWrite, s.seekPartition)
	s.registerAdminOps(r)
}

// maxListLimit caps every listing's page (docs/api/admin-api.md "Listing parameters").
const maxListLimit = 1000

// listPage reads limit and offset: a missing, malformed or negative value takes the default,
// a limit above 1000 is 1000, an offset above 1,000,000 is 1,000,000 (docs/api/README.md §2.9).
func listPage(q url.Values, defLimit int) mq.Page {
	limit := queryInt(q, "limit", defLimit)
	if limit < 0 {
		limit = defLimit
	}
	return mq.Page{Limit: min(limit, maxListLimit), Offset: max(queryIntMax(q, "offset", 0, maxListOffset), 0)}
}

// pageJSON echoes the page a listing used.
type pageJSON struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

func pagination(p mq.Page) pageJSON { return pageJSON(p) }

// timeRange reads the from and to parameters of a listing (nil when absent). A value that
// does not parse yields the message "Invalid <param> timestamp". The to bound is inclusive,
// and without fractional seconds it covers that whole second (PostgreSQL keeps microseconds).
func timeRange(q url.Values) (from, to *time.Time, msg string) {
	if from, msg = queryTime(q, "from"); msg != "" {
		return nil, nil, msg
	}
	if to, msg = queryTime(q, "to"); msg != "" {
		return nil, nil, msg
	}
	if v, _ := queryString(q, "to"); to != nil && (len(v) <= 19 || v[19] != '.') {
		end := to.Add(time.Second - time.Microsecond)
		to = &end
	}
	return from, to, ""
}

// queryTime reads one optional timestamp parameter.
func queryTime(q url.Values, name string) (*time.Time, string) {
	v, ok := queryString(q, name)
	if !ok {
		return nil, ""
	}
	t, err := parseTimestamp(v)
	if err != nil {
		return nil, "Invalid " + name + " timestamp"
	}
	return &t, ""
}

// msTime renders a response timestamp as docs/api/README.md §2.3 asks (UTC, milliseconds, Z); the zero
// time renders as null, so optional timestamps need no pointer.
type msTime time.Time

// MarshalJSON implements json.Marshaler.
func (t msTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + formatMilli(time.Time(t)) + `"`), nil
}

// msOpt is msTime for an optional timestamp.
func msOpt(t *time.Time) msTime {
	if t == nil {
		return msTime{}
	}
	return msTime(*t)
}

// mapRows converts store rows to their JSON form, keeping an empty result an empty array.
func mapRows[T, J any](rows []T, conv func(T) J) []J {
	out := make([]J, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out
}

// writeFailure answers the {"success":false,"error":…} body some routes use for 404.
func writeFailure(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"success": false, "error": msg})
}

// queryFilter reads an optional exact-match filter; an empty value filters nothing.
func queryFilter(q url.Values, name string) string {
	v, _ := queryString(q, name)
	return v
}
