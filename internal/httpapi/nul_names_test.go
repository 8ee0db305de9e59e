package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// nulReadSide is a read side without a database: every call answers the zero result (an
// unknown name's answer), and each call is recorded with whether a string in its arguments,
// however deep, holds U+0000.
type nulReadSide struct {
	mu    sync.Mutex
	calls int
	nul   []string // the calls that carried U+0000
}

// saw records one call of method with args.
func (f *nulReadSide) saw(method string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, a := range args {
		if holdsNUL(reflect.ValueOf(a)) {
			f.nul = append(f.nul, fmt.Sprintf("%s%#v", method, args))
			return
		}
	}
}

// take returns the calls and the calls with U+0000 since the last take.
func (f *nulReadSide) take() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, nul := f.calls, f.nul
	f.calls, f.nul = 0, nil
	return n, nul
}

// holdsNUL reports whether a string reachable from v holds U+0000.
func holdsNUL(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return strings.IndexByte(v.String(), 0) >= 0
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && holdsNUL(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if holdsNUL(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsNUL(v.Index(i)) {
				return true
			}
		}
	}
	return false
}

func (f *nulReadSide) Now() time.Time { return time.Now() }
func (f *nulReadSide) ListQueues(_ context.Context, fl mq.QueueListFilter) (mq.QueueList, error) {
	f.saw("ListQueues", fl)
	return mq.QueueList{}, nil
}
func (f *nulReadSide) LabelSummaries(_ context.Context, fl mq.LabelFilter) (mq.LabelList, error) {
	f.saw("LabelSummaries", fl)
	return mq.LabelList{}, nil
}
func (f *nulReadSide) Overview(context.Context) (mq.Overview, error) {
	f.saw("Overview")
	return mq.Overview{}, nil
}
func (f *nulReadSide) DeleteQueue(_ context.Context, name string) (bool, error) {
	f.saw("DeleteQueue", name)
	return false, nil
}
func (f *nulReadSide) ListMessages(_ context.Context, fl mq.MessageFilter) ([]mq.ListedMessage, error) {
	f.saw("ListMessages", fl)
	return nil, nil
}
func (f *nulReadSide) MessageDetail(_ context.Context, pid, tx string) (mq.MessageDetail, bool, error) {
	f.saw("MessageDetail", pid, tx)
	return mq.MessageDetail{}, false, nil
}
func (f *nulReadSide) DeleteMessage(_ context.Context, pid, tx string) (bool, error) {
	f.saw("DeleteMessage", pid, tx)
	return false, nil
}
func (f *nulReadSide) ListDLQ(_ context.Context, fl mq.DLQFilter) ([]mq.DLQEntry, int64, error) {
	f.saw("ListDLQ", fl)
	return nil, 0, nil
}
func (f *nulReadSide) ListPartitions(_ context.Context, fl mq.PartitionFilter) ([]mq.PartitionRow, int64, *time.Time, error) {
	f.saw("ListPartitions", fl)
	return nil, 0, nil, nil
}
func (f *nulReadSide) DeleteDLQEntry(_ context.Context, id string) (bool, error) {
	f.saw("DeleteDLQEntry", id)
	return false, nil
}
func (f *nulReadSide) DeleteDLQ(_ context.Context, sel mq.DLQSelection) (mq.DLQDeleteResult, error) {
	f.saw("DeleteDLQ", sel)
	return mq.DLQDeleteResult{}, nil
}
func (f *nulReadSide) MoveToDLQ(_ context.Context, pid, tx, group, reason string) ([]mq.GroupAction, bool, error) {
	f.saw("MoveToDLQ", pid, tx, group, reason)
	return nil, false, nil
}
func (f *nulReadSide) ClearQueue(_ context.Context, queue, partition string) (mq.ClearResult, bool, bool, error) {
	f.saw("ClearQueue", queue, partition)
	return mq.ClearResult{}, false, false, nil
}
func (f *nulReadSide) RequeueDLQ(_ context.Context, req mq.DLQRequeueRequest) (mq.DLQRequeueResult, error) {
	f.saw("RequeueDLQ", req)
	return mq.DLQRequeueResult{}, nil
}
func (f *nulReadSide) RetryMessage(_ context.Context, pid, tx, group string) ([]mq.GroupAction, bool, error) {
	f.saw("RetryMessage", pid, tx, group)
	return nil, false, nil
}
func (f *nulReadSide) AddTrace(_ context.Context, t mq.TraceRecord) (string, bool, error) {
	f.saw("AddTrace", t)
	return "", false, nil
}
func (f *nulReadSide) MessageTraces(_ context.Context, pid, tx string) ([]mq.Trace, error) {
	f.saw("MessageTraces", pid, tx)
	return nil, nil
}
func (f *nulReadSide) TracesByName(_ context.Context, name string, p mq.Page) ([]mq.NamedTrace, int64, error) {
	f.saw("TracesByName", name, p)
	return nil, 0, nil
}
func (f *nulReadSide) TraceNames(_ context.Context, search string, p mq.Page) ([]mq.TraceName, int64, error) {
	f.saw("TraceNames", search, p)
	return nil, 0, nil
}
func (f *nulReadSide) ConsumerGroups(_ context.Context, fl mq.GroupFilter) ([]mq.GroupSummary, error) {
	f.saw("ConsumerGroups", fl)
	return nil, nil
}
func (f *nulReadSide) LaggingPairs(_ context.Context, fl mq.LagFilter) ([]mq.PairLag, error) {
	f.saw("LaggingPairs", fl)
	return nil, nil
}
func (f *nulReadSide) ConsumerGroupPairs(_ context.Context, group, queue string, p mq.Page) ([]mq.PairLag, bool, error) {
	f.saw("ConsumerGroupPairs", group, queue, p)
	return nil, false, nil
}
func (f *nulReadSide) DeleteConsumerGroup(_ context.Context, group, queue string, metadata bool) (int, error) {
	f.saw("DeleteConsumerGroup", group, queue, metadata)
	return 0, nil
}
func (f *nulReadSide) SetSubscriptionTimestamp(_ context.Context, group string, ts time.Time) (int, error) {
	f.saw("SetSubscriptionTimestamp", group, ts)
	return 0, nil
}
func (f *nulReadSide) SeekQueue(_ context.Context, group, queue string, ts *time.Time) (int, bool, error) {
	f.saw("SeekQueue", group, queue, ts)
	return 0, false, nil
}
func (f *nulReadSide) SeekPartition(_ context.Context, group, queue, partition string) (*string, bool, error) {
	f.saw("SeekPartition", group, queue, partition)
	return nil, false, nil
}
func (f *nulReadSide) StatusOverview(_ context.Context, fl mq.QueueFilter, w mq.Window) (mq.StatusOverview, error) {
	f.saw("StatusOverview", fl, w)
	return mq.StatusOverview{}, nil
}
func (f *nulReadSide) StatusQueue(_ context.Context, name string, p mq.PartitionPage) (mq.QueueStatus, bool, error) {
	f.saw("StatusQueue", name, p)
	return mq.QueueStatus{}, false, nil
}
func (f *nulReadSide) StatusQueueMessages(_ context.Context, queue string, limit, offset int) ([]mq.QueueMessage, bool, error) {
	f.saw("StatusQueueMessages", queue, limit, offset)
	return nil, false, nil
}
func (f *nulReadSide) MessagesWritten(_ context.Context, fl mq.QueueFilter, unit string, start, to time.Time) ([]mq.CountPoint, error) {
	f.saw("MessagesWritten", fl, unit, start, to)
	return nil, nil
}
func (f *nulReadSide) WorkerSeries(_ context.Context, w mq.Window, hostname, workerID string) ([]mq.WorkerPoint, error) {
	f.saw("WorkerSeries", w, hostname, workerID)
	return nil, nil
}
func (f *nulReadSide) QueueOps(_ context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.QueuePoint, error) {
	f.saw("QueueOps", w, queue, limit)
	return mq.QueueSeriesSet[mq.QueuePoint]{}, nil, nil
}
func (f *nulReadSide) QueueLag(_ context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.QueuePoint], []mq.DepthPoint, error) {
	f.saw("QueueLag", w, queue, limit)
	return mq.QueueSeriesSet[mq.QueuePoint]{}, nil, nil
}
func (f *nulReadSide) ParkedSeries(_ context.Context, w mq.Window, queue string, limit int) (mq.QueueSeriesSet[mq.ParkedPoint], error) {
	f.saw("ParkedSeries", w, queue, limit)
	return mq.QueueSeriesSet[mq.ParkedPoint]{}, nil
}
func (f *nulReadSide) RetentionHistory(_ context.Context, w mq.Window, queue string, limit int) ([]mq.RetentionRun, []mq.RetentionTotal, int, error) {
	f.saw("RetentionHistory", w, queue, limit)
	return nil, nil, 0, nil
}
func (f *nulReadSide) PostgresStats(context.Context) (mq.PostgresStats, error) {
	f.saw("PostgresStats")
	return mq.PostgresStats{}, nil
}
func (f *nulReadSide) JobSummaries(context.Context) ([]mq.JobSummary, error) {
	f.saw("JobSummaries")
	return nil, nil
}

// nulDataPath is a data path without a database: every call answers the zero result.
type nulDataPath struct{}

func (nulDataPath) Push(context.Context, []mq.PushItem, *string) ([]mq.PushResult, error) {
	return nil, nil
}
func (nulDataPath) Pop(context.Context, mq.PopRequest) (mq.PopResult, error) {
	return mq.PopResult{}, nil
}
func (nulDataPath) Ack(context.Context, []mq.AckItem) ([]mq.AckResult, error) { return nil, nil }
func (nulDataPath) ExtendLease(context.Context, string, int) (time.Time, string, error) {
	return time.Time{}, "", nil
}
func (nulDataPath) Transaction(context.Context, []mq.TxnEntry, []string, *string) (mq.TxnOutcome, error) {
	return mq.TxnOutcome{}, nil
}
func (nulDataPath) Configure(context.Context, string, *string, *string, mq.QueueOptions) (string, string, string, string, error) {
	return "", "", "", "", nil
}
func (nulDataPath) Ping(context.Context) error { return nil }
func (nulDataPath) StreamRegister(context.Context, mq.StreamRegistration) (mq.StreamRegistered, error) {
	return mq.StreamRegistered{}, nil
}
func (nulDataPath) StreamCycle(context.Context, mq.StreamCycle, *string) (mq.StreamCycleOutcome, error) {
	return mq.StreamCycleOutcome{}, nil
}
func (nulDataPath) StreamState(context.Context, mq.StreamStateQuery) ([]mq.StreamStateRow, error) {
	return nil, nil
}
func (nulDataPath) StreamQueries(context.Context) ([]mq.StreamQuery, error) { return nil, nil }
func (nulDataPath) StreamDelete(context.Context, string) (bool, int64, error) {
	return false, 0, nil
}

// nulQueryNames are the query parameters that carry a name or a text filter on some route.
var nulQueryNames = []string{"queue", "partition", "namespace", "ns", "task", "consumerGroup", "group",
	"transactionId", "traceName", "search", "hostname", "workerId", "error", "state", "status"}

// nulBodies are the bodies that let a POST route with a path name get to its read-side call.
var nulBodies = map[string]string{
	"/api/v1/consumer-groups/:group/subscription":       `{"subscriptionTimestamp":"2026-01-01T00:00:00Z"}`,
	"/api/v1/consumer-groups/:group/queues/:queue/seek": `{"toEnd":true}`,
}

// nulDataRoutes are the routes with a path name that call the data path, not the read side
// (the broker keeps U+0000 from the database itself: TestHostileNULInPathAndQuery), and the
// tenant limits, whose tenant name is checked as a token's claim is (letters, digits, '.', '_'
// and '-') before anything is called.
var nulDataRoutes = []string{"/api/v1/pop/queue/:queue", "/api/v1/pop/queue/:queue/partition/:partition",
	"/api/v1/lease/:leaseId/extend", "/streams/v1/queries/:name", "/api/v1/system/tenants/:tenant/limits"}

// methodRoute is one registered method and route.
type methodRoute struct {
	method string
	*routeEntry
}

// routeEntries lists every route registered under n, HEAD twins left out.
func routeEntries(n *routeNode) []methodRoute {
	var out []methodRoute
	for m, rt := range n.routes {
		if m != http.MethodHead {
			out = append(out, methodRoute{m, rt})
		}
	}
	for _, c := range n.static {
		out = append(out, routeEntries(c)...)
	}
	if n.param != nil {
		out = append(out, routeEntries(n.param)...)
	}
	return out
}

// Every route, with U+0000 in each of its path parameters and in each name of its query, in
// turn: the request never hands that name to the read side (a handler that reads a name other
// than through nameArgs, or calls the read side without looking at it, fails here), and is
// never a 500. The same request with a plain name reaches the read side on every route with a
// path name, so the table cannot pass by stopping short of it.
func TestNULNamesNeverReachTheReadSide(t *testing.T) {
	read := &nulReadSide{}
	cfg := Config{Metrics: &countingMetrics{overload: map[string]int{}}, DefaultTimeout: time.Millisecond}
	h := New(nulDataPath{}, read, cfg, slog.New(slog.DiscardHandler))
	r := NewRouter()
	(&Server{data: nulDataPath{}, read: read, cfg: cfg}).register(r)
	routes := routeEntries(r.root)
	if len(routes) < 50 {
		t.Fatalf("only %d routes found", len(routes))
	}
	send := func(method, path, body string) int {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	check := func(method, path, body string) {
		t.Helper()
		code := send(method, path, body)
		if _, nul := read.take(); len(nul) > 0 || code == http.StatusInternalServerError {
			t.Errorf("%s %s: %d, read side called with U+0000: %v", method, path, code, nul)
		}
	}
	for _, rt := range routes {
		build := func(at int, v string) string {
			segs := strings.Split(rt.pattern, "/")
			i := 0
			for j, s := range segs {
				if !strings.HasPrefix(s, ":") {
					continue
				}
				switch {
				case i == at:
					segs[j] = v
				case s == ":partitionId" || s == ":dlqId" || s == ":leaseId":
					segs[j] = "00000000-0000-7000-8000-000000000000"
				default:
					segs[j] = "x"
				}
				i++
			}
			return strings.Join(segs, "/")
		}
		body := nulBodies[rt.pattern]
		if body == "" {
			body = "{}"
		}
		for i, p := range rt.paramNames {
			if p == "file" {
				continue // the dashboard's assets
			}
			send(rt.method, build(i, "x"), body)
			if n, _ := read.take(); n == 0 && !slices.Contains(nulDataRoutes, rt.pattern) {
				t.Errorf("%s %s with a plain %s never reached the read side", rt.method, rt.pattern, p)
			}
			check(rt.method, build(i, "a%00b"), body)
		}
		for _, name := range nulQueryNames {
			path := build(-1, "")
			check(rt.method, path+"?"+name+"=a%00b", body)
		}
	}
}
