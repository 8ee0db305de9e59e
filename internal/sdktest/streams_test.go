package sdktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/client/streams"
	"github.com/queen-go/queen/internal/testkit"
)

// The Go Stream builder (client/streams) against a real broker: one test per window kind,
// event time with its watermark, the gate, recovery after a worker restart, and config_hash
// equality with the official SDKs (docs/api/streams.md §7.1).

// patience bounds every wait of these tests: windows close on clocks and lease expiries, and
// the machine is loaded.
const patience = time.Minute

// skipWithoutStreams skips when the broker has no /streams/v1 routes yet.
func skipWithoutStreams(t *testing.T, c *queen.Client) {
	t.Helper()
	_, err := c.StreamQueries(testCtx(t))
	skipIfUnsupported(t, err, "GET /streams/v1/queries")
	if err != nil {
		t.Fatalf("StreamQueries: %v", err)
	}
}

// runStream starts s and stops it at the end of the test; runner errors fail the test
// unless allowed.
func runStream(t *testing.T, s *streams.Stream, o streams.RunOptions) *streams.Runner {
	t.Helper()
	if o.QueryID == "" {
		o.QueryID = queueName(t)
	}
	o.MaxWait = 500 * time.Millisecond
	if o.OnError == nil {
		o.OnError = func(err error, phase string) { t.Logf("runner %s error: %v", phase, err) }
	}
	r, err := s.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

// sinkReader collects what a sink queue receives, by partition, in delivery order.
type sinkReader struct {
	t  *testing.T
	q  queen.Queue
	mu sync.Mutex
	by map[string][]map[string]any
}

func newSinkReader(t *testing.T, q queen.Queue) *sinkReader {
	return &sinkReader{t: t, q: q, by: map[string][]map[string]any{}}
}

// drain pops (queue mode, auto-ack) what is there now.
func (s *sinkReader) drain() {
	for {
		b, err := s.q.Pop(testCtx(s.t), queen.PopOptions{Batch: 100, AutoAck: true})
		if err != nil {
			s.t.Fatalf("sink pop: %v", err)
		}
		if b.Empty() {
			return
		}
		s.mu.Lock()
		for _, m := range b.Messages {
			var v map[string]any
			if err := json.Unmarshal(m.Data, &v); err != nil {
				s.t.Fatalf("sink payload %s: %v", m.Data, err)
			}
			s.by[m.Partition] = append(s.by[m.Partition], v)
		}
		s.mu.Unlock()
	}
}

// total sums a numeric field over what a partition received.
func (s *sinkReader) total(partition, field string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n float64
	for _, v := range s.by[partition] {
		f, _ := v[field].(float64)
		n += f
	}
	return n
}

func (s *sinkReader) count(partition string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.by[partition])
}

// pushAmounts pushes n messages {amount: 1..n} to each partition.
func pushAmounts(t *testing.T, q queen.Queue, n int, partitions ...string) {
	t.Helper()
	for _, p := range partitions {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"amount": i + 1}
		}
		mustPush(t, q.Partition(p), items...)
	}
}

func amount(r streams.Record) float64 {
	v, _ := r.Value.(map[string]any)["amount"].(float64)
	return v
}

func one(streams.Record) float64 { return 1 }

// waitTotals waits until every partition's sink messages add up to count and sum.
func waitTotals(t *testing.T, sink *sinkReader, count, sum float64, partitions ...string) {
	t.Helper()
	testkit.Eventually(t, patience, 200*time.Millisecond, func() error {
		sink.drain()
		for _, p := range partitions {
			if c, s := sink.total(p, "count"), sink.total(p, "sum"); c != count || s != sum {
				return fmt.Errorf("partition %s: count %v sum %v, want %v %v", p, c, s, count, sum)
			}
		}
		return nil
	})
}

// A 2-second tumbling window with idle flush emits per-partition counts and sums equal to the
// input (docs/api/streams.md §8, S54 with the Go builder).
func TestStreamTumblingWindow(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	pushAmounts(t, src, 6, "p1", "p2", "p3")
	r := runStream(t, streams.From(src).
		WindowTumbling(2, streams.IdleFlush(500)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).
		To(sink), streams.RunOptions{})
	waitTotals(t, newSinkReader(t, sink), 6, 21, "p1", "p2", "p3")
	// The counters move just after the commit's answer, so a little after the sink shows it.
	testkit.Eventually(t, patience, 50*time.Millisecond, func() error {
		if m := r.Metrics(); m.Messages != 18 || m.Cycles < 3 {
			return fmt.Errorf("metrics: %+v", m)
		}
		return nil
	})
}

// Each message lands in size/slide sliding windows: counts add up to twice the input.
func TestStreamSlidingWindow(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	pushAmounts(t, src, 5, "p1")
	runStream(t, streams.From(src).
		WindowSliding(2, 1, streams.IdleFlush(500)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).
		To(sink), streams.RunOptions{})
	waitTotals(t, newSinkReader(t, sink), 10, 30, "p1")
}

// Session windows per key: a burst per key is one session, emitted by the idle flush once the
// key has been quiet for the gap.
func TestStreamSessionWindow(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	var items []any
	for i := range 8 {
		items = append(items, map[string]any{"user": []string{"ann", "bob"}[i%2], "amount": i + 1})
	}
	mustPush(t, src.Partition("p1"), items...)
	runStream(t, streams.From(src).
		KeyBy(func(r streams.Record) (string, error) { return r.Value.(map[string]any)["user"].(string), nil }).
		WindowSession(1, streams.IdleFlush(300)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).
		Map(func(r streams.Record) (any, error) {
			v := r.Value.(map[string]any)
			v["user"] = r.Key
			return v, nil
		}).
		To(sink), streams.RunOptions{})
	rd := newSinkReader(t, sink)
	testkit.Eventually(t, patience, 200*time.Millisecond, func() error {
		rd.drain()
		if rd.count("p1") < 2 {
			return fmt.Errorf("%d sessions so far", rd.count("p1"))
		}
		return nil
	})
	got := map[string][2]float64{}
	rd.mu.Lock()
	for _, v := range rd.by["p1"] {
		got[v["user"].(string)] = [2]float64{v["count"].(float64), v["sum"].(float64)}
	}
	n := len(rd.by["p1"])
	rd.mu.Unlock()
	if n != 2 || got["ann"] != [2]float64{4, 16} || got["bob"] != [2]float64{4, 20} {
		t.Fatalf("sessions: %d %v", n, got)
	}
}

// Cron windows align on the calendar; with every second the counts add up to the input.
func TestStreamCronWindow(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	pushAmounts(t, src, 4, "p1", "p2")
	runStream(t, streams.From(src).
		WindowCron("second", streams.IdleFlush(300)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).
		To(sink), streams.RunOptions{})
	waitTotals(t, newSinkReader(t, sink), 4, 10, "p1", "p2")
}

// Event time: windows close on the watermark (largest event time seen), which the broker
// keeps under __wm__; a record older than the watermark is late and dropped.
func TestStreamEventTimeWatermark(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec int) any {
		return map[string]any{"ts": base.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano)}
	}
	var first []any
	for s := range 10 {
		first = append(first, at(s))
	}
	mustPush(t, src.Partition("p1"), append(first, at(25))...)
	r := runStream(t, streams.From(src).
		WindowTumbling(10, streams.EventTime(func(r streams.Record) (time.Time, error) {
			return time.Parse(time.RFC3339Nano, r.Value.(map[string]any)["ts"].(string))
		}), streams.IdleFlush(0)).
		Aggregate(streams.Field("count", one)).
		Map(func(r streams.Record) (any, error) {
			v := r.Value.(map[string]any)
			v["window"] = r.Window.Key
			return v, nil
		}).
		To(sink), streams.RunOptions{})
	rd := newSinkReader(t, sink)
	testkit.Eventually(t, patience, 200*time.Millisecond, func() error {
		rd.drain()
		if rd.count("p1") != 1 {
			return fmt.Errorf("%d windows", rd.count("p1"))
		}
		return nil
	})
	if v := rd.by["p1"][0]; v["count"] != 10.0 || v["window"] != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("first window: %v", v)
	}
	rows, err := c.StreamState(testCtx(t), queen.StateQuery{QueryID: r.QueryID(), PartitionID: partitionID(t, src, "p1"), Keys: []string{"__wm__"}})
	if err != nil || len(rows) != 1 || string(rows[0].Value) != fmt.Sprintf(`{"eventTimeMs":%d}`, base.Add(25*time.Second).UnixMilli()) {
		t.Fatalf("watermark row: %v %+v", err, rows)
	}
	mustPush(t, src.Partition("p1"), at(5))
	testkit.Eventually(t, patience, 200*time.Millisecond, func() error {
		if m := r.Metrics(); m.LateEvents != 1 || m.Messages != 12 {
			return fmt.Errorf("metrics %+v", m)
		}
		return nil
	})
}

// partitionID looks a partition's id up in the queue's detail.
func partitionID(t *testing.T, q queen.Queue, name string) string {
	t.Helper()
	d, err := q.Detail(testCtx(t))
	if err != nil {
		t.Fatalf("Detail: %v", err)
	}
	for _, p := range d.Partitions {
		if p.Name == name {
			return p.ID
		}
	}
	t.Fatalf("no partition %s in %+v", name, d.Partitions)
	return ""
}

// A token-bucket gate lets 3 messages through per refill: denied tails come back after the
// lease (2 s) in order, so every message reaches the sink once, in per-partition order (S55
// with the Go builder).
func TestStreamGate(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src := createQueue(t, c, queen.LeaseTime(2*time.Second))
	sink := createQueue(t, c)
	pushAmounts(t, src, 10, "p1", "p2")
	const capacity, perSec = 3.0, 1.5
	r := runStream(t, streams.From(src).
		Gate(func(r streams.Record, g *streams.GateContext) (bool, error) {
			now := float64(g.StreamTimeMs)
			tokens, ok := g.State["tokens"].(float64)
			last, _ := g.State["last"].(float64)
			if !ok {
				tokens, last = capacity, now
			}
			tokens = min(capacity, tokens+(now-last)/1000*perSec)
			g.State["last"] = now
			if tokens < 1 {
				g.State["tokens"] = tokens
				return false, nil
			}
			g.State["tokens"] = tokens - 1
			return true, nil
		}).
		To(sink), streams.RunOptions{})
	rd := newSinkReader(t, sink)
	testkit.Eventually(t, 2*patience, 250*time.Millisecond, func() error {
		rd.drain()
		if rd.count("p1") < 10 || rd.count("p2") < 10 {
			return fmt.Errorf("delivered %d and %d", rd.count("p1"), rd.count("p2"))
		}
		return nil
	})
	for _, p := range []string{"p1", "p2"} {
		var got []float64
		for _, v := range rd.by[p] {
			got = append(got, v["amount"].(float64))
		}
		if len(got) != 10 || !sort.Float64sAreSorted(got) || got[0] != 1 || got[9] != 10 {
			t.Fatalf("partition %s: %v", p, got)
		}
	}
	testkit.Eventually(t, patience, 50*time.Millisecond, func() error {
		if m := r.Metrics(); m.GateAllows != 20 || m.GateDenials == 0 {
			return fmt.Errorf("gate metrics: %+v", m)
		}
		return nil
	})
}

// A worker that stops and a new one that starts under the same QueryID: the second resumes
// from the state the first committed to the broker (and from the group's cursor).
func TestStreamRecoveryAfterRestart(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	// A short lease: a pop of the stopped worker that was parked when it stopped must not
	// hold the new messages for long.
	src, sink := createQueue(t, c, queen.LeaseTime(3*time.Second)), createQueue(t, c)
	query := queueName(t)
	chain := func() *streams.Stream {
		return streams.From(src).WindowTumbling(3600, streams.IdleFlush(0)).
			Aggregate(streams.Field("count", one), streams.Field("sum", amount)).To(sink)
	}
	pushAmounts(t, src, 5, "p1")
	first, err := chain().Run(context.Background(), streams.RunOptions{QueryID: query, MaxWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, patience, 100*time.Millisecond, func() error {
		if m := first.Metrics(); m.Messages != 5 {
			return fmt.Errorf("first worker: %+v", m)
		}
		return nil
	})
	first.Stop()
	pid := partitionID(t, src, "p1")
	state := func() (count, sum float64) {
		rows, err := c.StreamState(testCtx(t), queen.StateQuery{QueryID: first.QueryID(), PartitionID: pid, KeyPrefix: "tumb:3600\u001f"})
		if err != nil {
			t.Fatalf("state: %v", err)
		}
		for _, row := range rows {
			var v struct {
				Acc struct{ Count, Sum float64 } `json:"acc"`
			}
			_ = json.Unmarshal(row.Value, &v)
			count += v.Acc.Count
			sum += v.Acc.Sum
		}
		return count, sum
	}
	if n, s := state(); n != 5 || s != 15 {
		t.Fatalf("state after the first worker: %v %v", n, s)
	}
	pushAmounts(t, src, 5, "p1")
	second := runStream(t, chain(), streams.RunOptions{QueryID: query})
	if second.QueryID() != first.QueryID() {
		t.Fatalf("query id changed: %s %s", first.QueryID(), second.QueryID())
	}
	testkit.Eventually(t, patience, 100*time.Millisecond, func() error {
		if n, s := state(); n != 10 || s != 30 {
			return fmt.Errorf("state: count %v sum %v", n, s)
		}
		return nil
	})
	testkit.Eventually(t, patience, 50*time.Millisecond, func() error {
		if m := second.Metrics(); m.Messages != 5 {
			return fmt.Errorf("second worker: %+v", m)
		}
		return nil
	})
}

// A query registered with the hash the official SDKs compute for a chain (here by a plain
// HTTP registration, as the JavaScript SDK would send it) is resumed by the Go builder's equal
// chain without a mismatch; a changed chain gets ErrConfigHashMismatch until Reset.
func TestStreamConfigHashEquality(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	query := queueName(t)
	// JSON.stringify([{kind:"window-tumbling",seconds:2,gracePeriod:0,idleFlushMs:1000,
	// eventTime:false,allowedLateness:0,onLate:"drop"},{kind:"aggregate",fields:["count","sum"]},
	// {kind:"sink",queue:<sink>}]) hashed with SHA-256: the official algorithm (see
	// client/streams/confighash_test.go for its source), computed here over the test's own sink
	// name with the canonical text of that test's vector.
	official := officialHash(`[{"kind":"window-tumbling","seconds":2,"gracePeriod":0,"idleFlushMs":1000,"eventTime":false,"allowedLateness":0,"onLate":"drop"},{"kind":"aggregate","fields":["count","sum"]},{"kind":"sink","queue":"` + sink.Name() + `"}]`)
	body, _ := json.Marshal(map[string]any{"name": query, "source_queue": src.Name(), "sink_queue": sink.Name(), "config_hash": official})
	resp, err := http.Post(brokerURL+"/streams/v1/queries", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("register as the JS SDK: %v %v", err, resp)
	}
	var reg struct {
		QueryID string `json:"query_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()

	chain := streams.From(src).WindowTumbling(2, streams.IdleFlush(1000)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).To(sink)
	if chain.ConfigHash() != official {
		t.Fatalf("Go hash %s, official %s", chain.ConfigHash(), official)
	}
	r := runStream(t, chain, streams.RunOptions{QueryID: query})
	if r.QueryID() != reg.QueryID {
		t.Fatalf("resumed another query: %s, registered %s", r.QueryID(), reg.QueryID)
	}
	r.Stop()

	changed := streams.From(src).WindowTumbling(5).Aggregate(streams.Field("count", one)).To(sink)
	_, err = changed.Run(context.Background(), streams.RunOptions{QueryID: query})
	var mm *queen.StreamMismatchError
	if !errors.Is(err, queen.ErrConfigHashMismatch) || !errors.As(err, &mm) || mm.QueryID != reg.QueryID {
		t.Fatalf("changed chain: %v", err)
	}
	r2 := runStream(t, changed, streams.RunOptions{QueryID: query, Reset: true})
	if r2.QueryID() != reg.QueryID {
		t.Fatalf("reset changed the query id: %s", r2.QueryID())
	}
}

// officialHash is the last step of the official algorithm: the lower-case hex SHA-256 of the
// chain's JSON text.
func officialHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// State an official runtime left (an open window in the official key and value shapes,
// written here by a raw cycle as the JavaScript SDK writes it) is resumed by the Go builder:
// its fold starts from the stored accumulator.
func TestStreamResumesOfficialState(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c), createQueue(t, c)
	query := queueName(t)
	pushAmounts(t, src, 3, "p1")
	ms, err := c.Messages(testCtx(t), queen.MessageQuery{Queue: src.Name(), Limit: 10})
	if err != nil || len(ms) != 3 {
		t.Fatalf("Messages: %v %d", err, len(ms))
	}
	pid := ms[0].PartitionID
	start := ms[0].CreatedAt.Truncate(time.Hour)
	if !ms[2].CreatedAt.Truncate(time.Hour).Equal(start) {
		t.Skip("the messages straddle an hour boundary")
	}
	official := officialHash(`[{"kind":"window-tumbling","seconds":3600,"gracePeriod":0,"idleFlushMs":0,"eventTime":false,"allowedLateness":0,"onLate":"drop"},{"kind":"aggregate","fields":["count","sum"]},{"kind":"sink","queue":"` + sink.Name() + `"}]`)
	reg, err := c.RegisterStreamQuery(testCtx(t), queen.StreamRegistration{Name: query, SourceQueue: src.Name(), SinkQueue: sink.Name(), ConfigHash: official})
	if err != nil {
		t.Fatal(err)
	}
	key := "tumb:3600\u001f" + start.UTC().Format("2006-01-02T15:04:05.000Z") + "\u001f" + pid
	res, err := c.CommitCycle(testCtx(t), queen.Cycle{QueryID: reg.QueryID, PartitionID: pid, ReleaseLease: true,
		StateOps: []queen.StateOp{{Type: "upsert", Key: key, Value: map[string]any{
			"acc": map[string]any{"count": 2, "sum": 100}, "windowStart": start.UnixMilli(), "windowEnd": start.Add(time.Hour).UnixMilli()}}}})
	if err != nil || !res.Success {
		t.Fatalf("official-shaped state: %v %+v", err, res)
	}
	r := runStream(t, streams.From(src).WindowTumbling(3600, streams.IdleFlush(0)).
		Aggregate(streams.Field("count", one), streams.Field("sum", amount)).To(sink), streams.RunOptions{QueryID: query})
	if r.ConfigHash() != official || r.QueryID() != reg.QueryID {
		t.Fatalf("hash %s query %s", r.ConfigHash(), r.QueryID())
	}
	testkit.Eventually(t, patience, 100*time.Millisecond, func() error {
		rows, err := c.StreamState(testCtx(t), queen.StateQuery{QueryID: reg.QueryID, PartitionID: pid, Keys: []string{key}})
		if err != nil || len(rows) != 1 {
			return fmt.Errorf("rows: %v %+v", err, rows)
		}
		var v struct {
			Acc struct{ Count, Sum float64 } `json:"acc"`
		}
		if json.Unmarshal(rows[0].Value, &v) != nil || v.Acc.Count != 5 || v.Acc.Sum != 106 {
			return fmt.Errorf("value %s, want count 5 and sum 106", rows[0].Value)
		}
		return nil
	})
}

// A worker that hangs in the middle of a batch (as if killed): its lease expires, another
// worker of the query takes the batch over and commits it; when the first one wakes up, its
// cycle is rolled back (its lease is gone), so nothing is counted twice.
func TestStreamWorkerDiesMidBatch(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	skipWithoutStreams(t, c)
	src, sink := createQueue(t, c, queen.LeaseTime(2*time.Second)), createQueue(t, c)
	query := queueName(t)
	hung, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	chain := func(hang bool) *streams.Stream {
		return streams.From(src).
			Map(func(r streams.Record) (any, error) {
				if hang {
					once.Do(func() { close(hung) })
					<-release
				}
				return r.Value, nil
			}).
			WindowTumbling(3600, streams.IdleFlush(0)).
			Aggregate(streams.Field("count", one), streams.Field("sum", amount)).To(sink)
	}
	pushAmounts(t, src, 5, "p1")
	var errs sync.Map
	first := runStream(t, chain(true), streams.RunOptions{QueryID: query,
		OnError: func(err error, phase string) { errs.Store(err.Error(), phase) }})
	<-hung
	second := runStream(t, chain(false), streams.RunOptions{QueryID: query})
	pid := partitionID(t, src, "p1")
	count := func() float64 {
		rows, err := c.StreamState(testCtx(t), queen.StateQuery{QueryID: second.QueryID(), PartitionID: pid, KeyPrefix: "tumb:3600\u001f"})
		if err != nil || len(rows) != 1 {
			return -1
		}
		var v struct {
			Acc struct{ Count float64 } `json:"acc"`
		}
		_ = json.Unmarshal(rows[0].Value, &v)
		return v.Acc.Count
	}
	testkit.Eventually(t, patience, 100*time.Millisecond, func() error {
		if n := count(); n != 5 {
			return fmt.Errorf("count %v", n)
		}
		return nil
	})
	close(release)
	testkit.Eventually(t, patience, 100*time.Millisecond, func() error {
		if m := first.Metrics(); m.RolledBack != 1 {
			return fmt.Errorf("first worker: %+v", m)
		}
		return nil
	})
	if n := count(); n != 5 {
		t.Fatalf("after the hung worker woke up: count %v", n)
	}
	if m := second.Metrics(); m.Messages != 5 {
		t.Fatalf("second worker: %+v", m)
	}
}
