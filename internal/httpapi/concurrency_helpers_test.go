package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Concurrency tests over real HTTP: many producers and consumers at once, checking the
// invariants of DESIGN.md (no skipped message, one live lease per pair, guarded acks) by
// their observable outcomes: every group gets every message exactly once, in position order.

// ccSetup is setup with a queue name unique to this run, so the tests also hold with -count=N
// (the database lives as long as the test process).
func ccSetup(t *testing.T, o testserver.Options) *bundle {
	b := setup(t, o)
	b.queue = fmt.Sprintf("%s-%d", b.queue, time.Now().UnixNano())
	return b
}

// ccShort cuts a response body for an error message.
func ccShort(body []byte) string {
	if len(body) > 300 {
		return string(body[:300]) + "..."
	}
	return string(body)
}

// ccAPI is an HTTP client for tests that work from many goroutines: its methods return errors
// instead of failing the test (t.Fatal must only be called from the test's own goroutine),
// and its transport keeps enough idle connections for the concurrency in use.
type ccAPI struct {
	base string
	c    *http.Client
}

func newCCAPI(t testing.TB, base string) *ccAPI {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &ccAPI{base: base, c: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (a *ccAPI) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	resp, out, err := roundTrip(ctx, a.c, method, a.base+path, body, nil)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// push writes items and requires 201 with every item queued.
func (a *ccAPI) push(ctx context.Context, items ...obj) ([]pushed, error) {
	code, body, err := a.call(ctx, "POST", "/api/v1/push", obj{"items": items})
	if err != nil {
		return nil, err
	}
	if code != http.StatusCreated {
		return nil, fmt.Errorf("push: %d %s", code, ccShort(body))
	}
	var res []pushed
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("push answer %s: %v", body, err)
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("push: %d results for %d items: %s", len(res), len(items), body)
	}
	for _, r := range res {
		if r.Status != "queued" {
			return nil, fmt.Errorf("push: item not queued: %s", ccShort(body))
		}
	}
	return res, nil
}

// pop pops; ok is false on 204. Any other status is an error.
func (a *ccAPI) pop(ctx context.Context, path string) (p popped, ok bool, err error) {
	code, body, err := a.call(ctx, "GET", path, nil)
	if err != nil {
		return p, false, err
	}
	switch code {
	case http.StatusNoContent:
		if len(body) != 0 {
			return p, false, fmt.Errorf("pop %s: 204 with body %q", path, body)
		}
		return p, false, nil
	case http.StatusOK:
		if err := json.Unmarshal(body, &p); err != nil {
			return p, false, fmt.Errorf("pop answer %s: %v", body, err)
		}
		if !p.Success || len(p.Messages) == 0 {
			return p, false, fmt.Errorf("pop %s: 200 without messages: %s", path, body)
		}
		return p, true, nil
	}
	return p, false, fmt.Errorf("pop %s: %d %s", path, code, body)
}

// acks posts to /api/v1/ack (one item) or /api/v1/ack/batch and requires 200 with one
// result per item.
func (a *ccAPI) acks(ctx context.Context, group string, items ...obj) ([]acked, error) {
	path, body := "/api/v1/ack/batch", any(obj{"consumerGroup": group, "acknowledgments": items})
	if len(items) == 1 && group == "" {
		path, body = "/api/v1/ack", items[0]
	}
	code, out, err := a.call(ctx, "POST", path, body)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", path, code, out)
	}
	var res []acked
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(items) {
		return nil, fmt.Errorf("%s answer %s for %d items (%v)", path, out, len(items), err)
	}
	return res, nil
}

// ccPayload is what the producers of these tests write: producer id and its sequence number.
type ccPayload struct {
	P int `json:"p"`
	S int `json:"s"`
}

// ccDelivery is one message as a consumer received it.
type ccDelivery struct {
	key       string
	partition string
	payload   ccPayload
	createdAt time.Time
}

// ccLog records what one consumer group received, in delivery order per partition.
type ccLog struct {
	mu     sync.Mutex
	seen   map[string]int
	byPart map[string][]ccDelivery
	n      atomic.Int64 // distinct messages received
}

func newCCLog() *ccLog { return &ccLog{seen: map[string]int{}, byPart: map[string][]ccDelivery{}} }

// recordLocked appends a delivery (caller holds mu) and reports a duplicate as an error.
func (l *ccLog) recordLocked(d ccDelivery) error {
	l.seen[d.key]++
	l.byPart[d.partition] = append(l.byPart[d.partition], d)
	if l.seen[d.key] > 1 {
		return fmt.Errorf("message %s delivered %d times", d.key, l.seen[d.key])
	}
	l.n.Add(1)
	return nil
}

// ccDeliveries turns a pop answer into deliveries, checking what every answer must satisfy:
// per-message lease and group equal the answer's, messages of one partition contiguous,
// partitionsClaimed right, and the leaseId empty exactly with autoAck.
func ccDeliveries(p popped, group string, autoAck bool) ([]ccDelivery, error) {
	if group == "" {
		group = "__QUEUE_MODE__"
	}
	if p.ConsumerGroup != group {
		return nil, fmt.Errorf("answer for group %q names %q", group, p.ConsumerGroup)
	}
	if autoAck != (p.LeaseID == "") {
		return nil, fmt.Errorf("autoAck=%v but leaseId %q", autoAck, p.LeaseID)
	}
	out := make([]ccDelivery, len(p.Messages))
	parts := map[string]bool{}
	for i, m := range p.Messages {
		if m.LeaseID != p.LeaseID || m.ConsumerGroup != group {
			return nil, fmt.Errorf("message %s: leaseId %q group %q, answer %q %q", m.TransactionID, m.LeaseID, m.ConsumerGroup, p.LeaseID, group)
		}
		if i > 0 && m.PartitionID != p.Messages[i-1].PartitionID && parts[m.PartitionID] {
			return nil, fmt.Errorf("partition %s not contiguous in one answer", m.PartitionID)
		}
		parts[m.PartitionID] = true
		if err := json.Unmarshal(m.Data, &out[i].payload); err != nil {
			return nil, fmt.Errorf("payload %s: %v", m.Data, err)
		}
		at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("createdAt %q: %v", m.CreatedAt, err)
		}
		out[i].key, out[i].partition, out[i].createdAt = m.TransactionID, m.PartitionID, at
	}
	if p.PartitionsClaimed != len(parts) || p.PartitionID != p.Messages[0].PartitionID {
		return nil, fmt.Errorf("partitionsClaimed %d / partitionId %s for %d partitions starting %s",
			p.PartitionsClaimed, p.PartitionID, len(parts), p.Messages[0].PartitionID)
	}
	return out, nil
}

// checkOrder checks a group's deliveries per partition: createdAt never decreases and each
// producer's sequence numbers strictly increase (a producer writes sequentially, so its
// messages in one partition have increasing positions).
func (l *ccLog) checkOrder(t *testing.T, name string) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 3 {
			t.Errorf(name+" "+format, args...)
		}
	}
	for part, ds := range l.byPart {
		last := map[int]int{}
		for i, d := range ds {
			if i > 0 && d.createdAt.Before(ds[i-1].createdAt) {
				report("partition %s: createdAt went back at delivery %d: %v after %v", part, i, d.createdAt, ds[i-1].createdAt)
			}
			if s, ok := last[d.payload.P]; ok && d.payload.S <= s {
				report("partition %s: producer %d seq %d delivered after seq %d", part, d.payload.P, d.payload.S, s)
			}
			last[d.payload.P] = d.payload.S
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d deliveries out of position order", name, bad)
	}
}

// checkAll requires every key of want to have been received exactly once, and nothing else.
func (l *ccLog) checkAll(t *testing.T, name string, want map[string]bool) {
	t.Helper()
	missing := 0
	for k := range want {
		if l.seen[k] != 1 {
			missing++
			if missing <= 5 {
				t.Errorf("%s: message %s received %d times", name, k, l.seen[k])
			}
		}
	}
	for k := range l.seen {
		if !want[k] {
			t.Errorf("%s: received unknown message %s", name, k)
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d messages not received exactly once", name, missing, len(want))
	}
}

// ccRunner runs goroutines and collects their first errors; the first error cancels ctx so
// the others stop early.
type ccRunner struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

func newCCRunner(t *testing.T, bound time.Duration) *ccRunner {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return &ccRunner{t: t, ctx: ctx, cancel: cancel}
}

func (r *ccRunner) fail(err error) {
	r.mu.Lock()
	if len(r.errs) < 10 {
		r.errs = append(r.errs, err)
	}
	r.mu.Unlock()
	r.cancel()
}

func (r *ccRunner) goDo(fn func(ctx context.Context) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// Once the run is cancelled (an earlier failure or the time bound), the other
		// goroutines' errors are only the echo of the cancellation.
		if err := fn(r.ctx); err != nil && r.ctx.Err() == nil {
			r.fail(err)
		}
	}()
}

// wait waits for every goroutine and fails the test with the collected errors, or when the
// time bound ran out.
func (r *ccRunner) wait() {
	r.t.Helper()
	r.wg.Wait()
	timedOut := r.ctx.Err() == context.DeadlineExceeded
	r.cancel()
	for _, err := range r.errs {
		r.t.Error(err)
	}
	if timedOut {
		r.t.Error("time bound ran out")
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

// ccProduce runs producers that each push perProducer numbered messages, sequentially, in
// requests of 1 to maxItems items spread over partitions, producer p through apis[p%len(apis)].
// It returns the keys pushed and a
// channel closed once every producer is done.
func ccProduce(r *ccRunner, apis []*ccAPI, queue string, producers, perProducer, maxItems int, partitions []string) (map[string]bool, <-chan struct{}) {
	want := map[string]bool{}
	var wg sync.WaitGroup
	wg.Add(producers)
	produced := make(chan struct{})
	go func() { wg.Wait(); close(produced) }()
	for p := range producers {
		for s := range perProducer {
			want[fmt.Sprintf("p%d-s%d", p, s)] = true
		}
	}
	for p := range producers {
		r.goDo(func(ctx context.Context) error {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			for s := 0; s < perProducer; {
				n := min(1+rng.IntN(maxItems), perProducer-s)
				items := make([]obj, n)
				for i := range items {
					items[i] = obj{"queue": queue, "partition": partitions[rng.IntN(len(partitions))],
						"transactionId": fmt.Sprintf("p%d-s%d", p, s), "payload": ccPayload{P: p, S: s}}
					s++
				}
				if _, err := apis[p%len(apis)].push(ctx, items...); err != nil {
					return fmt.Errorf("producer %d: %w", p, err)
				}
			}
			return nil
		})
	}
	return want, produced
}

// ccStall notices a consumer group that stops making progress once everything is pushed: a
// skipped message would otherwise only show when the whole time bound runs out.
type ccStall struct {
	produced <-chan struct{}
	n        int64
	since    time.Time
}

func (s *ccStall) check(n, total int64) error {
	select {
	case <-s.produced:
	default:
		return nil
	}
	if s.since.IsZero() || n != s.n {
		s.n, s.since = n, time.Now()
		return nil
	}
	if time.Since(s.since) > 5*time.Second {
		return fmt.Errorf("stuck at %d of %d messages for 5s with every message pushed: skipped or lost", n, total)
	}
	return nil
}

// ccAcks builds the acks of deliveries.
func ccAcks(ds []ccDelivery, lease string) []obj {
	out := make([]obj, len(ds))
	for i, d := range ds {
		out[i] = obj{"transactionId": d.key, "partitionId": d.partition}
		if lease != "" {
			out[i]["leaseId"] = lease
		}
	}
	return out
}
