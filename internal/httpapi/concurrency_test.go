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

// Many producers push into a few shared partitions while three groups (queue mode and two
// named groups, three members each) consume with small batches, acking one by one, by batch,
// or with autoAck. Producers and members are spread over two broker instances sharing the
// database. Every group must receive every message exactly once, and within each partition in
// position order.
func TestConcurrentProducersConsumersExactlyOnce(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	apis := []*ccAPI{newCCAPI(t, b.srv.URL), newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	const producers, perProducer, members = 8, 30, 3
	total := producers * perProducer
	partitions := []string{"p0", "p1", "p2"}
	r := newCCRunner(t, 25*time.Second)
	start := time.Now()

	want, produced := ccProduce(r, apis, b.queue, producers, perProducer, 3, partitions)
	groups := []string{"", "g1", "g2"}
	logs := make([]*ccLog, len(groups))
	for gi, group := range groups {
		logs[gi] = newCCLog()
		l := logs[gi]
		for m := range members {
			r.goDo(func(ctx context.Context) error {
				return ccConsumeMember(ctx, apis[(m+gi)%len(apis)], b.queue, group, m, l, int64(total), produced)
			})
		}
	}
	r.wait()
	for gi, group := range groups {
		name := "group " + group
		if group == "" {
			name = "queue mode"
		}
		logs[gi].checkAll(t, name, want)
		logs[gi].checkOrder(t, name)
		if len(logs[gi].byPart) != len(partitions) {
			t.Errorf("%s: received from %d partitions, want %d", name, len(logs[gi].byPart), len(partitions))
		}
	}
	t.Logf("%d messages x %d groups in %v", total, len(groups), time.Since(start).Round(time.Millisecond))
}

// ccConsumeMember is one member of a group. Member 0 pops one partition at a time and acks each
// message with /api/v1/ack, member 1 pops up to two partitions and acks everything with one
// shuffled /api/v1/ack/batch, member 2 pops with autoAck. It stops when the group has received
// total messages, and fails when the group stops making progress after every message was
// pushed.
//
// Deliveries are recorded before the batch is acked, so the log of a partition is in delivery
// order: the next batch of a partition can only be claimed after the ack. An autoAck pop
// consumes its batch at once, so member 2 holds the log's lock across its pop and record.
func ccConsumeMember(ctx context.Context, api *ccAPI, queue, group string, member int, l *ccLog, total int64, produced <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(member), uint64(len(group))))
	stall := ccStall{produced: produced}
	for n := l.n.Load(); n < total; n = l.n.Load() {
		if ctx.Err() != nil {
			return nil
		}
		if err := stall.check(n, total); err != nil {
			return fmt.Errorf("group %q member %d: %w", group, member, err)
		}
		batch := 1 + rng.IntN(3)
		path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&consumerGroup=%s", queue, batch, group)
		switch member {
		case 0:
			path += "&wait=true&timeout=300"
		case 1:
			path += "&partitions=2&wait=true&timeout=300"
		case 2:
			path += "&autoAck=true"
		}
		if member == 2 {
			l.mu.Lock()
		}
		p, ok, err := api.pop(ctx, path)
		if err != nil || !ok {
			if member == 2 {
				l.mu.Unlock()
				if err == nil {
					time.Sleep(5 * time.Millisecond) // nothing deliverable: let the others run
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("group %q member %d: %w", group, member, err)
			}
			continue
		}
		ds, err := ccDeliveries(p, group, member == 2)
		if err == nil && len(ds) > batch {
			err = fmt.Errorf("%d messages for batch %d", len(ds), batch)
		}
		if member != 2 {
			l.mu.Lock()
		}
		for _, d := range ds {
			if err == nil {
				err = l.recordLocked(d)
			}
		}
		l.mu.Unlock()
		if err != nil {
			return fmt.Errorf("group %q member %d: %w", group, member, err)
		}
		switch member {
		case 0:
			for i, it := range ccAcks(ds, p.LeaseID) {
				if group != "" {
					it["consumerGroup"] = group
				}
				res, err := api.acks(ctx, "", it)
				if err != nil {
					return fmt.Errorf("group %q member %d: %w", group, member, err)
				}
				last := i == len(ds)-1
				if a := res[0]; !a.Success || a.Error != nil || a.AlreadyCommitted || a.LeaseReleased != last {
					return fmt.Errorf("group %q member %d: ack %d of %d: %+v", group, member, i+1, len(ds), a)
				}
			}
		case 1:
			items := ccAcks(ds, p.LeaseID)
			rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
			for i := range items {
				if i%2 == 1 {
					items[i]["status"] = "success" // normalised to completed
				}
			}
			res, err := api.acks(ctx, group, items...)
			if err != nil {
				return fmt.Errorf("group %q member %d: %w", group, member, err)
			}
			for i, a := range res {
				if !a.Success || a.Error != nil || a.AlreadyCommitted || !a.LeaseReleased || a.Index != i {
					return fmt.Errorf("group %q member %d: batch ack %d: %+v", group, member, i, a)
				}
			}
		}
	}
	return nil
}

// Many concurrent single-item pushes to ONE partition, through two broker instances, commit
// in an order of their own; a consumer popping batch=1 (and one with autoAck) right behind
// them must never have its cursor pass a message that commits later: each message is
// delivered exactly once, in order.
func TestConcurrentPushesNeverSkip(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	api := newCCAPI(t, b.srv.URL)
	pushers := []*ccAPI{api, newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	const producers, perProducer = 8, 20
	total := int64(producers * perProducer)
	r := newCCRunner(t, 20*time.Second)
	start := time.Now()

	want, produced := ccProduce(r, pushers, b.queue, producers, perProducer, 1, []string{"only"})
	leased, auto := newCCLog(), newCCLog()
	// Queue mode pops one message at a time with a lease and acks it.
	r.goDo(func(ctx context.Context) error {
		path := "/api/v1/pop/queue/" + b.queue + "/partition/only?batch=1&wait=true&timeout=300"
		stall := ccStall{produced: produced}
		for n := leased.n.Load(); n < total && ctx.Err() == nil; n = leased.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("queue mode: %w", err)
			}
			p, ok, err := api.pop(ctx, path)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			ds, err := ccDeliveries(p, "", false)
			if err != nil {
				return err
			}
			if len(ds) != 1 {
				return fmt.Errorf("batch=1 answered %d messages", len(ds))
			}
			leased.mu.Lock()
			err = leased.recordLocked(ds[0])
			leased.mu.Unlock()
			if err != nil {
				return err
			}
			res, err := api.acks(ctx, "", ccAcks(ds, p.LeaseID)...)
			if err != nil {
				return err
			}
			if a := res[0]; !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
				return fmt.Errorf("ack %s: %+v", ds[0].key, a)
			}
		}
		return nil
	})
	// A named group reads the same partition with autoAck, in small batches, without waiting.
	r.goDo(func(ctx context.Context) error {
		path := "/api/v1/pop/queue/" + b.queue + "?batch=3&autoAck=true&consumerGroup=auto"
		stall := ccStall{produced: produced}
		for n := auto.n.Load(); n < total && ctx.Err() == nil; n = auto.n.Load() {
			if err := stall.check(n, total); err != nil {
				return fmt.Errorf("autoAck group: %w", err)
			}
			p, ok, err := api.pop(ctx, path)
			if err != nil {
				return err
			}
			if !ok {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			ds, err := ccDeliveries(p, "auto", true)
			if err != nil {
				return err
			}
			auto.mu.Lock()
			for _, d := range ds {
				if err == nil {
					err = auto.recordLocked(d)
				}
			}
			auto.mu.Unlock()
			if err != nil {
				return err
			}
		}
		return nil
	})
	r.wait()
	leased.checkAll(t, "queue mode", want)
	leased.checkOrder(t, "queue mode")
	auto.checkAll(t, "autoAck group", want)
	auto.checkOrder(t, "autoAck group")
	t.Logf("%d messages in %v", total, time.Since(start).Round(time.Millisecond))
}

// Many members of one group, spread over two broker instances, pop concurrently over a few
// partitions. A partition whose lease is live and not yet acked must never be handed to
// another pop: each pop's partitions are tracked with their lease id until the ack releases
// them, the holder's own pop of its partition must answer 204, and no message may be
// delivered twice.
func TestConcurrentPopsOneLeasePerPartition(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	apis := []*ccAPI{newCCAPI(t, b.srv.URL), newCCAPI(t, testserver.Start(t, testDSN, testserver.Options{}).URL)}
	api := apis[0]
	const nParts, perPart, members = 3, 40, 6
	r := newCCRunner(t, 20*time.Second)
	start := time.Now()

	want := map[string]bool{}
	var items []obj
	for s := range perPart {
		for p := range nParts {
			key := fmt.Sprintf("p%d-s%d", p, s)
			want[key] = true
			items = append(items, obj{"queue": b.queue, "partition": fmt.Sprintf("part%d", p), "transactionId": key,
				"payload": ccPayload{P: p, S: s}})
		}
	}
	if _, err := api.push(r.ctx, items...); err != nil {
		t.Fatal(err)
	}

	type hold struct {
		lease     string
		releasing bool // the ack is in flight: a new claim may legitimately win the race
	}
	var (
		mu      sync.Mutex
		holders = map[string]*hold{} // partition id -> current holder
		leases  = map[string]bool{}
		names   = map[string]string{} // partition id -> name
		claims  atomic.Int64
	)
	l := newCCLog()
	total := int64(len(want))
	for m := range members {
		api := apis[m%len(apis)]
		r.goDo(func(ctx context.Context) error {
			path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=2&partitions=%d&consumerGroup=workers&wait=true&timeout=200", b.queue, 1+m%2)
			for l.n.Load() < total && ctx.Err() == nil {
				p, ok, err := api.pop(ctx, path)
				if err != nil || !ok {
					if err != nil && ctx.Err() == nil {
						return err
					}
					continue
				}
				ds, err := ccDeliveries(p, "workers", false)
				if err != nil {
					return err
				}
				parts := map[string]bool{}
				mu.Lock()
				if leases[p.LeaseID] {
					err = fmt.Errorf("lease id %s handed out twice", p.LeaseID)
				}
				leases[p.LeaseID] = true
				for _, msg := range p.Messages {
					if parts[msg.PartitionID] {
						continue
					}
					parts[msg.PartitionID] = true
					names[msg.PartitionID] = msg.Partition
					if h := holders[msg.PartitionID]; h != nil && !h.releasing && err == nil {
						err = fmt.Errorf("partition %s claimed by lease %s while lease %s is live and un-acked",
							msg.Partition, p.LeaseID, h.lease)
					}
					holders[msg.PartitionID] = &hold{lease: p.LeaseID}
				}
				mu.Unlock()
				claims.Add(int64(len(parts)))
				if err != nil {
					return err
				}
				l.mu.Lock()
				for _, d := range ds {
					if err == nil {
						err = l.recordLocked(d)
					}
				}
				l.mu.Unlock()
				if err != nil {
					return err
				}
				// While we hold them, nobody of the group (ourselves included) gets our partitions.
				for pid := range parts {
					mu.Lock()
					name := names[pid]
					mu.Unlock()
					_, ok, err := api.pop(ctx, "/api/v1/pop/queue/"+b.queue+"/partition/"+name+"?consumerGroup=workers&batch=10")
					if err != nil {
						return err
					}
					if ok {
						return fmt.Errorf("partition %s delivered while lease %s holds it", name, p.LeaseID)
					}
				}
				time.Sleep(time.Duration(2+rand.IntN(6)) * time.Millisecond) // hold the lease a moment
				mu.Lock()
				for pid := range parts {
					holders[pid].releasing = true
				}
				mu.Unlock()
				res, err := api.acks(ctx, "workers", ccAcks(ds, p.LeaseID)...)
				if err != nil {
					return err
				}
				for i, a := range res {
					if !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
						return fmt.Errorf("ack %s: %+v", ds[i].key, a)
					}
				}
				mu.Lock()
				for pid := range parts {
					if h := holders[pid]; h != nil && h.lease == p.LeaseID {
						delete(holders, pid)
					}
				}
				mu.Unlock()
			}
			return nil
		})
	}
	r.wait()
	l.checkAll(t, "workers", want)
	l.checkOrder(t, "workers")
	if len(holders) != 0 {
		t.Errorf("partitions still held at the end: %v", holders)
	}
	t.Logf("%d messages, %d claims by %d members in %v", total, claims.Load(), members, time.Since(start).Round(time.Millisecond))
}

// ccKeys lists the transaction ids of a pop answer.
func ccKeys(p popped) []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// An ack that arrives after its lease expired, while another member re-popped the batch, is
// rejected with "Invalid or expired lease": it neither moves the cursor nor releases the new
// holder's lease, whose own acks then succeed.
func TestLateAckAfterLeaseExpiry(t *testing.T) {
	b := ccSetup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 1})
	b.push("", obj{"payload": 1, "transactionId": "k1"}, obj{"payload": 2, "transactionId": "k2"},
		obj{"payload": 3, "transactionId": "k3"})
	popPath := "/api/v1/pop/queue/" + b.queue + "?batch=3&consumerGroup=g"

	first, ok := b.pop(popPath)
	if !ok || fmt.Sprint(ccKeys(first)) != "[k1 k2 k3]" {
		t.Fatalf("first pop %+v", first)
	}
	if _, ok := b.pop(popPath); ok {
		t.Fatal("pair delivered again while its lease is live")
	}
	b.srv.Clock.Advance(2 * time.Second) // the 1 s lease expires

	second, ok := b.pop(popPath)
	if !ok || fmt.Sprint(ccKeys(second)) != "[k1 k2 k3]" || second.LeaseID == first.LeaseID || second.Messages[0].RetryCount != 0 {
		t.Fatalf("re-pop after expiry %+v (first lease %s)", second, first.LeaseID)
	}
	pid := first.PartitionID
	ackOf := func(key, lease string) obj {
		return obj{"transactionId": key, "partitionId": pid, "leaseId": lease, "consumerGroup": "g"}
	}
	const invalid = "Invalid or expired lease"

	// The late ack, alone and as a batch: rejected, nothing released.
	if a := b.ack(ackOf("k3", first.LeaseID)); a.Success || a.Error == nil || *a.Error != invalid || a.LeaseReleased || a.AlreadyCommitted {
		t.Fatalf("late ack %+v", a)
	}
	code, body := b.do("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g", "acknowledgments": []obj{
		ackOf("k1", first.LeaseID), ackOf("k2", first.LeaseID), ackOf("k3", first.LeaseID)}})
	if code != http.StatusOK {
		t.Fatalf("late ack batch: %d %s", code, body)
	}
	for _, a := range decode[[]acked](t, body) {
		if a.Success || a.Error == nil || *a.Error != invalid || a.LeaseReleased {
			t.Fatalf("late batch ack %s", body)
		}
	}
	// The new holder keeps its lease: nobody else gets the pair.
	if _, ok := b.pop(popPath); ok {
		t.Fatal("late ack released the new holder's lease")
	}
	// The cursor did not move: k1 is not already committed for the new holder.
	if a := b.ack(ackOf("k1", second.LeaseID)); !a.Success || a.AlreadyCommitted || a.LeaseReleased {
		t.Fatalf("new holder's ack of k1 %+v", a)
	}
	// Below the cursor a late ack is already committed (no lease check); above it, rejected.
	if a := b.ack(ackOf("k1", first.LeaseID)); !a.Success || !a.AlreadyCommitted || a.LeaseReleased {
		t.Fatalf("late ack below the cursor %+v", a)
	}
	if a := b.ack(ackOf("k2", first.LeaseID)); a.Success || a.Error == nil || *a.Error != invalid {
		t.Fatalf("late ack of k2 %+v", a)
	}
	code, body = b.do("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g", "acknowledgments": []obj{
		ackOf("k3", second.LeaseID), ackOf("k2", second.LeaseID)}})
	if code != http.StatusOK {
		t.Fatalf("new holder's ack batch: %d %s", code, body)
	}
	for _, a := range decode[[]acked](t, body) {
		if !a.Success || a.AlreadyCommitted || !a.LeaseReleased {
			t.Fatalf("new holder's ack batch %s", body)
		}
	}
	// Everything is consumed once: nothing comes back, not even after another lease time.
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed batch delivered again: %+v", p)
	}
	b.srv.Clock.Advance(2 * time.Second)
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed batch delivered after expiry: %+v", p)
	}
}

// The same race, run for real: after expiry the late ack and the re-pop go out at once. In
// either order the late ack is rejected and the re-pop gets the whole batch. The re-pop long
// polls: while the late ack holds the pair's row lock a claim skips the pair (claims never
// wait for a lock, concepts.md §6.2), and the rejected ack changes nothing worth a wake-up,
// so the pop finds the batch at its next fallback check.
func TestLateAckRacingRepop(t *testing.T) {
	b := ccSetup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 1})
	api := newCCAPI(t, b.srv.URL)
	popPath := "/api/v1/pop/queue/" + b.queue + "?batch=2&consumerGroup=g"
	repopPath := popPath + "&wait=true&timeout=5000"
	for round := range 8 {
		k1, k2 := fmt.Sprintf("r%d-a", round), fmt.Sprintf("r%d-b", round)
		b.push("", obj{"payload": round, "transactionId": k1}, obj{"payload": round, "transactionId": k2})
		first, ok := b.pop(popPath)
		if !ok || fmt.Sprint(ccKeys(first)) != fmt.Sprintf("[%s %s]", k1, k2) {
			t.Fatalf("round %d: pop %+v", round, first)
		}
		b.srv.Clock.Advance(2 * time.Second)

		var wg sync.WaitGroup
		var late []acked
		var second popped
		var lateErr, popErr error
		var popOK bool
		wg.Add(2)
		go func() {
			defer wg.Done()
			late, lateErr = api.acks(context.Background(), "g", ccAcks([]ccDelivery{
				{key: k1, partition: first.PartitionID}, {key: k2, partition: first.PartitionID}}, first.LeaseID)...)
		}()
		go func() {
			defer wg.Done()
			second, popOK, popErr = api.pop(context.Background(), repopPath)
		}()
		wg.Wait()
		if lateErr != nil || popErr != nil {
			t.Fatalf("round %d: %v %v", round, lateErr, popErr)
		}
		for _, a := range late {
			if a.Success || a.Error == nil || *a.Error != "Invalid or expired lease" {
				t.Fatalf("round %d: late ack %+v", round, late)
			}
		}
		if !popOK || fmt.Sprint(ccKeys(second)) != fmt.Sprintf("[%s %s]", k1, k2) || second.LeaseID == first.LeaseID {
			t.Fatalf("round %d: re-pop %+v", round, second)
		}
		res, err := api.acks(context.Background(), "g", ccAcks([]ccDelivery{
			{key: k1, partition: second.PartitionID}, {key: k2, partition: second.PartitionID}}, second.LeaseID)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res {
			if !a.Success || a.AlreadyCommitted || !a.LeaseReleased {
				t.Fatalf("round %d: holder's ack %+v", round, res)
			}
		}
	}
	if p, ok := b.pop(popPath); ok {
		t.Fatalf("consumed messages delivered again: %+v", p)
	}
}
