package httpapi_test

// POST /api/v1/transaction under concurrency: claim 47 of docs/api/transaction.md §9, bundles that
// push and ack over overlapping partitions and consumer rows in opposite orders, and a
// three-stage pipeline chained by transactions with lost responses retried. Each run is
// bounded in time; goroutines report through t.Errorf, never t.Fatal.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// txnClient bounds every request of these tests, so a stuck request fails instead of hanging.
var txnClient = &http.Client{Timeout: 2 * time.Minute}

// txnCall sends one request from any goroutine: no t.Fatal, the error is returned.
func txnCall(method, url string, body any) (int, []byte, error) {
	resp, out, err := roundTrip(context.Background(), txnClient, method, url, body, nil)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// txnOutcome is a transaction answer as the concurrent tests need it.
type txnOutcome struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Results []struct {
		Type             string `json:"type"`
		TransactionID    string `json:"transactionId"`
		MessageID        string `json:"messageId"`
		AlreadyCommitted bool   `json:"alreadyCommitted"`
		Duplicate        bool   `json:"duplicate"`
	} `json:"results"`
}

// txnPostBundle sends a bundle from any goroutine; a transport failure or a status other than
// 200 is an error.
func txnPostBundle(baseURL string, body any) (txnOutcome, []byte, error) {
	code, raw, err := txnCall(http.MethodPost, baseURL+txnPath, body)
	if err != nil {
		return txnOutcome{}, raw, err
	}
	var out txnOutcome
	if code != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		return out, raw, fmt.Errorf("transaction answered %d %s", code, raw)
	}
	return out, raw, nil
}

// txnPopAny pops from any goroutine; no messages (204) is an empty result.
func txnPopAny(baseURL, path string) (popped, error) {
	code, raw, err := txnCall(http.MethodGet, baseURL+path, nil)
	switch {
	case err != nil:
		return popped{}, err
	case code == http.StatusNoContent:
		return popped{}, nil
	case code != http.StatusOK:
		return popped{}, fmt.Errorf("pop %s: %d %s", path, code, raw)
	}
	var p popped
	return p, json.Unmarshal(raw, &p)
}

// txnReversed returns a reversed copy of s when rev is set, else s.
func txnReversed[T any](s []T, rev bool) []T {
	if !rev {
		return s
	}
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// txnWantDrained requires every partition of queue to hold want messages, all consumed by
// group: cursor at the last position, no lease, no batch.
func txnWantDrained(t testing.TB, queue, group string, parts []string, want int) {
	t.Helper()
	rows := txnMessages(t, queue)
	for _, p := range parts {
		n := 0
		var pid string
		for _, m := range rows {
			if m.Partition == p {
				n++
			}
		}
		if err := stateDB(t).QueryRow(t.Context(), `SELECT p.id::text FROM partitions p JOIN queues q ON q.id = p.queue_id
			WHERE q.name = $1 AND p.name = $2`, queue, p).Scan(&pid); err != nil {
			t.Fatalf("partition %s/%s: %v", queue, p, err)
		}
		c := txnState(t, pid, group)
		if n != want || c.Cursor != int64(want) || c.LeaseID != nil || c.BatchEnd != nil {
			t.Errorf("%s/%s: %d messages, consumer %+v; want %d consumed", queue, p, n, c, want)
		}
	}
}

func TestTxnClaim47_ConcurrentOppositeOrdersAllCommit(t *testing.T) {
	b := setup(t, testserver.Options{})
	parts := []string{"p0", "p1", "p2", "p3"}
	const clients, bundles = 8, 15
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range bundles {
				var items []any
				for _, p := range txnReversed(parts, w%2 == 1) {
					items = append(items, obj{"queue": b.queue, "partition": p, "payload": obj{"w": w, "n": n}})
				}
				out, raw, err := txnPostBundle(b.srv.URL, obj{"operations": []any{obj{"type": "push", "items": items}}})
				if err != nil || !out.Success || len(out.Results) != len(parts) {
					t.Errorf("client %d bundle %d: %v %s", w, n, err, raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	rows := txnMessages(t, b.queue)
	if len(rows) != clients*bundles*len(parts) {
		t.Fatalf("%d messages stored, want %d", len(rows), clients*bundles*len(parts))
	}
	// Positions are dense per partition, and each client's bundles keep their order.
	last := map[string]int{}
	for i, m := range rows {
		var pl struct{ W, N int }
		if err := json.Unmarshal([]byte(m.Payload), &pl); err != nil {
			t.Fatal(err)
		}
		if want := int64(i%(clients*bundles)) + 1; m.Position != want {
			t.Fatalf("%s: position %d, want %d", m.Partition, m.Position, want)
		}
		k := fmt.Sprintf("%s/%d", m.Partition, pl.W)
		if n, seen := last[k]; seen && pl.N != n+1 || !seen && pl.N != 0 {
			t.Fatalf("%s: client %d bundle %d after %d", m.Partition, pl.W, pl.N, n)
		}
		last[k] = pl.N
	}
}

// Bundles that ack the messages of multi-partition pops and push into the same partitions, half
// of the workers listing acks and pushes in reversed order. Every bundle also re-acks an
// already consumed anchor message of each partition, which takes that consumer row's lock too,
// so all bundles contend for the same partition and consumer rows. The broker's lock order must
// keep them all committing; every message must be acked once and every derived message stored
// once.
func TestTxnConcurrentAcksAndPushesOverlappingPartitions(t *testing.T) {
	b := setup(t, testserver.Options{})
	parts := []string{"p0", "p1", "p2", "p3"}
	const workers, seedsPerPartition = 8, 30
	pop := txnPopPath(b.queue, "", "consumerGroup=g&batch=4&partitions=4")
	for _, p := range parts {
		b.push(p, obj{"transactionId": "anchor", "payload": nil})
	}
	first := b.txnMustPop(pop, "anchor", "anchor", "anchor", "anchor")
	var anchors []any
	for _, m := range first.Messages {
		anchors = append(anchors, obj{"type": "ack", "transactionId": "anchor", "partitionId": m.PartitionID, "consumerGroup": "g"})
	}
	b.txnCommit(obj{"operations": anchors, "requiredLeases": []any{first.LeaseID}})
	for _, p := range parts {
		var items []obj
		for n := range seedsPerPartition {
			items = append(items, obj{"transactionId": fmt.Sprintf("s-%s-%02d", p, n), "payload": n})
		}
		b.push(p, items...)
	}
	// Every seed yields one derived message per partition; derived messages yield nothing.
	total := int64(len(parts) * seedsPerPartition * (1 + len(parts)))
	var acked atomic.Int64
	var mu sync.Mutex
	ackedIDs := map[string]int{}
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rev := w%2 == 1
			for acked.Load() < total && ctx.Err() == nil {
				p, err := txnPopAny(b.srv.URL, txnPopPath(b.queue, "", "consumerGroup=g&batch=4&partitions=2"))
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					cancel()
					return
				}
				if len(p.Messages) == 0 {
					time.Sleep(2 * time.Millisecond) // a consumer's poll interval, not an ordering
					continue
				}
				ops := slices.Clone(txnReversed(anchors, rev))
				for _, m := range txnReversed(p.Messages, rev) {
					ops = append(ops, obj{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID,
						"consumerGroup": "g"})
					if !strings.HasPrefix(m.TransactionID, "s-") {
						continue
					}
					for _, q := range txnReversed(parts, rev) {
						ops = append(ops, obj{"type": "push", "queue": b.queue, "partition": q,
							"transactionId": "d-" + m.TransactionID + "-" + q, "payload": m.TransactionID})
					}
				}
				out, raw, err := txnPostBundle(b.srv.URL, obj{"operations": ops, "requiredLeases": []any{p.LeaseID}})
				if err != nil || !out.Success {
					t.Errorf("worker %d: %v %s", w, err, raw) // a deadlock would show here as QDB
					cancel()
					return
				}
				mu.Lock()
				for _, r := range out.Results {
					if r.Type == "ack" && r.AlreadyCommitted != (r.TransactionID == "anchor") {
						t.Errorf("worker %d: ack of %s: alreadyCommitted %v", w, r.TransactionID, r.AlreadyCommitted)
					}
				}
				for _, m := range p.Messages {
					ackedIDs[m.ID]++
				}
				mu.Unlock()
				acked.Add(int64(len(p.Messages)))
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if acked.Load() != total || len(ackedIDs) != int(total) {
		t.Fatalf("acked %d messages (%d distinct) in time, want %d", acked.Load(), len(ackedIDs), total)
	}
	stored := map[string]bool{}
	for _, m := range txnMessages(t, b.queue) {
		if stored[m.Partition+"/"+m.Key] {
			t.Fatalf("%s/%s stored twice", m.Partition, m.Key)
		}
		stored[m.Partition+"/"+m.Key] = true
	}
	for _, src := range parts {
		for n := range seedsPerPartition {
			for _, q := range parts {
				if k := fmt.Sprintf("%s/d-s-%s-%02d-%s", q, src, n, q); !stored[k] {
					t.Fatalf("derived message %s lost", k)
				}
			}
		}
	}
	if len(stored) != int(total)+len(parts) {
		t.Fatalf("%d messages stored, want %d", len(stored), int(total)+len(parts))
	}
	txnWantDrained(t, b.queue, "g", parts, 1+seedsPerPartition*(1+len(parts)))
}

// txnStage is one pipeline stage: it moves batches from queue in to queue out in transactions
// that ack the batch and push its messages, keyed from their input, into the same partition.
type txnStage struct {
	b         *bundle
	n         int // stage number: keys written to out are "s<n+1>-<input key>"
	in, out   string
	sent      atomic.Int64 // bundles sent
	resent    atomic.Int64 // bundles sent again as if the first answer had been lost
	overlaped atomic.Int64 // bundles sent twice at once
}

// run consumes until ctx ends.
func (s *txnStage) run(ctx context.Context, worker int) {
	path := txnPopPath(s.in, "", "batch=3&wait=true&timeout=100")
	for ctx.Err() == nil {
		p, err := txnPopAny(s.b.srv.URL, path)
		if err != nil {
			if ctx.Err() == nil {
				s.b.t.Errorf("stage %d worker %d: %v", s.n, worker, err)
			}
			return
		}
		if len(p.Messages) > 0 && !s.settle(p) {
			return
		}
	}
}

// settle sends one batch's bundle, sometimes twice, and checks the answers.
func (s *txnStage) settle(p popped) bool {
	t := s.b.t
	ops := make([]any, 0, 2*len(p.Messages))
	items := make([]any, 0, len(p.Messages))
	for _, m := range p.Messages {
		ops = append(ops, obj{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID})
		items = append(items, obj{"queue": s.out, "partition": m.Partition,
			"transactionId": fmt.Sprintf("s%d-%s", s.n+1, m.TransactionID), "payload": m.Data})
	}
	body := obj{"operations": append(ops, obj{"type": "push", "items": items}), "requiredLeases": []any{p.LeaseID}}
	qdup := txnQDUP(s.out, p.Partition)
	seq := s.sent.Add(1)
	var answers []txnOutcome
	switch {
	case seq%5 == 0: // the client gave up waiting and sent again while the first was in flight
		s.overlaped.Add(1)
		var wg sync.WaitGroup
		answers = make([]txnOutcome, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { answers[i], _, errs[i] = txnPostBundle(s.b.srv.URL, body) })
		}
		wg.Wait()
		if err := cmpErr(errs...); err != nil {
			t.Errorf("stage %d: %v", s.n, err)
			return false
		}
		if answers[0].Success == answers[1].Success {
			t.Errorf("stage %d: two identical bundles at once answered %+v", s.n, answers)
			return false
		}
	default:
		out, raw, err := txnPostBundle(s.b.srv.URL, body)
		if err != nil || !out.Success {
			t.Errorf("stage %d: %v %s", s.n, err, raw)
			return false
		}
		answers = append(answers, out)
		if seq%3 == 0 { // the answer was lost: retry as is
			s.resent.Add(1)
			again, raw, err := txnPostBundle(s.b.srv.URL, body)
			if err != nil {
				t.Errorf("stage %d retry: %v", s.n, err)
				return false
			}
			if !again.Success && again.Error != qdup {
				t.Errorf("stage %d retry: %s, want success or %q", s.n, raw, qdup)
				return false
			}
			answers = append(answers, again)
		}
	}
	for _, a := range answers {
		if !a.Success && (a.Error != qdup || len(a.Results) != 0) {
			t.Errorf("stage %d: %+v, want success or %q", s.n, a, qdup)
			return false
		}
	}
	return true
}

// cmpErr returns the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Three stages chained by transactions, several consumers per stage, deterministic keys and
// lost answers retried: every input reaches the final queue exactly once, in per-partition order.
func TestTxnPipelineExactlyOnceInOrder(t *testing.T) {
	b := setup(t, testserver.Options{})
	parts := []string{"a", "b", "c", "d"}
	const perPartition, workersPerStage = 32, 3
	queues := []string{b.queue + "-s1", b.queue + "-s2", b.queue + "-s3", b.queue + "-final"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stages []*txnStage
	var wg sync.WaitGroup
	for i := range 3 {
		s := &txnStage{b: b, n: i + 1, in: queues[i], out: queues[i+1]}
		stages = append(stages, s)
		for w := range workersPerStage {
			wg.Go(func() { s.run(ctx, w) })
		}
	}
	// The producer writes the inputs in small batches, interleaving partitions, while the
	// stages already run.
	for n := 0; n < perPartition; n += 4 {
		for _, p := range parts {
			items := make([]any, 0, 4)
			for k := n; k < n+4; k++ {
				items = append(items, obj{"queue": queues[0], "partition": p,
					"transactionId": fmt.Sprintf("in-%s-%02d", p, k), "payload": obj{"p": p, "n": k}})
			}
			if code, raw := b.do(http.MethodPost, "/api/v1/push", obj{"items": items}); code != http.StatusCreated {
				t.Fatalf("push inputs: %d %s", code, raw)
			}
		}
	}
	total := len(parts) * perPartition
	testkit.Eventually(t, 45*time.Second, 50*time.Millisecond, func() error {
		if n := len(txnMessages(t, queues[3])); n < total && !t.Failed() {
			return fmt.Errorf("%d of %d messages in the final queue", n, total)
		}
		return nil
	})
	// Real elapsed time, not an ordering: late duplicates, if any would come, show up meanwhile.
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if t.Failed() {
		return
	}
	final := txnMessages(t, queues[3])
	if len(final) != total {
		t.Fatalf("%d messages reached the final queue in time, want %d", len(final), total)
	}
	for i, m := range final {
		p, n := parts[i/perPartition], i%perPartition
		if want := fmt.Sprintf("s4-s3-s2-in-%s-%02d", p, n); m.Partition != p || m.Key != want ||
			!txnSameJSON(m.Payload, fmt.Sprintf(`{"n":%d,"p":%q}`, n, p)) {
			t.Fatalf("final[%d] = %s/%s %s, want %s/%s", i, m.Partition, m.Key, m.Payload, p, want)
		}
	}
	for _, q := range queues[:3] {
		txnWantDrained(t, q, "__QUEUE_MODE__", parts, perPartition)
	}
	for _, s := range stages {
		if s.resent.Load() == 0 || s.overlaped.Load() == 0 {
			t.Errorf("stage %d never simulated a lost answer (%d bundles)", s.n, s.sent.Load())
		}
		t.Logf("stage %d: %d bundles, %d resent, %d sent twice at once", s.n, s.sent.Load(), s.resent.Load(), s.overlaped.Load())
	}
}
