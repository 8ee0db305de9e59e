package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/waiter"
)

// Group commit for consumers (merge.go): with the consume gate's only slot held by the test,
// requests queue in their merger; when the test lets go, the request that gets the slot takes
// all of them into one database call. The counters show the merge: the tests assert that it
// happened, and that every request got exactly the answer it would have had alone.

// holdConsumeGate takes the consume gate's only slot (the broker must have ConsumeCalls 1 and
// a ConsumeWait past the test) and returns its release.
func holdConsumeGate(t *testing.T, x *tb) func() {
	t.Helper()
	leave, err := x.b.consumeGate.enter(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(leave) }
	t.Cleanup(release)
	return release
}

// waitPending waits until m has n requests waiting.
func waitPending[T any](t *testing.T, m *merger[T], n int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, time.Millisecond, func() error {
		m.mu.Lock()
		got := len(m.pending)
		m.mu.Unlock()
		if got != n {
			return fmt.Errorf("pending requests: %d, want %d", got, n)
		}
		return nil
	})
}

// popEach pops one message of each partition of q (named p0 .. p{n-1}, one message "k{i}" each)
// and returns the answers by partition index.
func popEach(t *testing.T, x *tb, q string, n int) []mq.PopResult {
	t.Helper()
	out := make([]mq.PopResult, n)
	for i := range n {
		out[i] = x.pop(mq.PopRequest{Queue: q, Partition: fmt.Sprintf("p%d", i), Batch: 1})
		if len(out[i].Messages) != 1 {
			t.Fatalf("pop of p%d: %+v", i, out[i])
		}
	}
	return out
}

// pushEach pushes one message "k{i}" into each partition p{i} of q.
func pushEach(x *tb, q string, n int) {
	items := make([]mq.PushItem, n)
	for i := range n {
		items[i] = item(q, fmt.Sprintf("p%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	x.push(items...)
}

// Many single-message acks of many partitions, queued behind the gate, go in one call; each is
// answered with its own result, and the poisoned ones (an unknown lease, a partition that is not
// the message's) fail alone, exactly as each would alone.
func TestMergedAcksAnswerEachRequestItsOwnResult(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: time.Hour})
	q := queueName(t)
	const n = 30
	pushEach(x, q, n)
	pops := popEach(t, x, q, n)
	other := pops[1].Messages[0].PartitionID

	reqs := make([][]mq.AckItem, 0, n+2)
	for _, p := range pops {
		m := p.Messages[0]
		reqs = append(reqs, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
			Group: mq.QueueMode, Status: "completed", LeaseID: p.LeaseID}})
	}
	m0 := pops[0].Messages[0]
	reqs = append(reqs,
		[]mq.AckItem{{PartitionID: m0.PartitionID, TransactionID: m0.TransactionID, Group: mq.QueueMode,
			Status: "completed", LeaseID: newID()}}, // unknown lease
		[]mq.AckItem{{PartitionID: other, TransactionID: m0.TransactionID, Group: mq.QueueMode,
			Status: "completed", LeaseID: pops[1].LeaseID}}) // not a message of that partition
	// What each poisoned request gets alone, on a broker that merges nothing.
	want := make([]mq.AckResult, 2)
	for i, r := range reqs[n:] {
		res, err := x.st.Ack(context.Background(), []mq.AckItem{canonicalAck(r[0])})
		if err != nil || len(res) != 1 || res[0].Success {
			t.Fatalf("poisoned ack %d alone: %+v %v", i, res, err)
		}
		want[i] = res[0]
	}

	release := holdConsumeGate(t, x)
	calls0, reqs0 := x.b.acks.counts()
	got := make([][]mq.AckResult, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	// The poisoned requests queue first, so they sit inside the merged call, before the acks
	// of the same pairs.
	order := append([]int{n, n + 1}, func() []int {
		var o []int
		for i := range n {
			o = append(o, i)
		}
		return o
	}()...)
	for k, i := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = x.b.Ack(context.Background(), reqs[i])
		}()
		waitPending(t, x.b.acks, k+1) // in this order
	}
	release()
	wg.Wait()
	calls, requests := x.b.acks.counts()
	if calls-calls0 != 1 || requests-reqs0 != int64(len(reqs)) {
		t.Fatalf("%d requests in %d calls, want %d in one", requests-reqs0, calls-calls0, len(reqs))
	}
	for i := range n {
		r := got[i]
		if errs[i] != nil || len(r) != 1 || !r[0].Success || !r[0].LeaseReleased || r[0].AlreadyCommitted ||
			r[0].Partition == nil || *r[0].Partition != fmt.Sprintf("p%d", i) {
			t.Fatalf("ack %d: %+v %v", i, r, errs[i])
		}
	}
	for i, w := range want {
		r := got[n+i]
		if errs[n+i] != nil || len(r) != 1 || r[0].Success || fmt.Sprint(r[0].Error) == "<nil>" ||
			*r[0].Error != *w.Error {
			t.Fatalf("poisoned ack %d in the merged call: %+v %v, alone: %+v", i, r, errs[n+i], w)
		}
	}
	// Every pair was settled: a new pop finds nothing left.
	if p := x.pop(mq.PopRequest{Queue: q, Batch: 10}); len(p.Messages) != 0 {
		t.Fatalf("after the acks a pop found %+v", p.Messages)
	}
}

// A merged ack call that fails as a whole (here: one pair's consumer row is locked past the
// store's lock_timeout) is retried request by request: the other requests commit, the one
// naming the locked pair fails alone.
func TestMergedAckCallFailingAsAWholeIsRetriedPerRequest(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DSN: testDSN, MaxConns: 4, ConnectTimeout: 30 * time.Second,
		StatementTimeout: 30 * time.Second, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hub := waiter.NewHub()
	b := New(st, hub, Config{ConsumeCalls: 1, ConsumeWait: time.Hour, WithoutListener: true},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); b.Stop(); st.Close() })
	x := &tb{t: t, st: st, b: b}
	q := queueName(t)
	const n = 6
	pushEach(x, q, n)
	pops := popEach(t, x, q, n)

	// Another session holds the consumer row of p0 (as a slow writer would).
	db := rawDB(t)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM consumers WHERE partition_id = $1 FOR UPDATE", pops[0].Messages[0].PartitionID); err != nil {
		t.Fatal(err)
	}

	release := holdConsumeGate(t, x)
	calls0, _ := b.acks.counts()
	got := make([][]mq.AckResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range pops {
		m := p.Messages[0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = b.Ack(ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
				Group: mq.QueueMode, Status: "completed", LeaseID: p.LeaseID}})
		}()
		waitPending(t, b.acks, i+1)
	}
	release()
	wg.Wait()
	if calls, _ := b.acks.counts(); calls-calls0 != 1 {
		t.Fatalf("%d calls, want the %d requests merged into one", calls-calls0, n)
	}
	if errs[0] == nil {
		t.Fatalf("the ack of the locked pair succeeded: %+v", got[0])
	}
	for i := 1; i < n; i++ {
		if errs[i] != nil || len(got[i]) != 1 || !got[i][0].Success || got[i][0].AlreadyCommitted {
			t.Fatalf("ack %d, retried alone after the merged call failed: %+v %v", i, got[i], errs[i])
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The failed request changed nothing: its ack still applies.
	m := pops[0].Messages[0]
	res, err := b.Ack(ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
		Group: mq.QueueMode, Status: "completed", LeaseID: pops[0].LeaseID}})
	if err != nil || !res[0].Success || res[0].AlreadyCommitted {
		t.Fatalf("the failed ack, again: %+v %v", res, err)
	}
}

// Many goroutines ack single messages of many partitions at once, under -race, through a small
// gate so that calls merge: every message is acknowledged exactly once, each request answered
// with its own result, and nothing is left to deliver.
func TestConcurrentSingleAcksMergeAndSettleEveryPair(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1})
	q := queueName(t)
	const parts, rounds = 40, 3
	ctx := context.Background()
	for r := range rounds {
		items := make([]mq.PushItem, parts)
		for i := range parts {
			items[i] = item(q, fmt.Sprintf("p%d", i), fmt.Sprintf("r%d-p%d", r, i), "1")
		}
		x.push(items...)
	}
	calls0, reqs0 := x.b.acks.counts()
	var mu sync.Mutex
	acked := map[string]int{}
	var wg sync.WaitGroup
	errc := make(chan error, parts)
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				p, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Partition: fmt.Sprintf("p%d", i), Batch: 1})
				if err != nil || len(p.Messages) != 1 {
					errc <- fmt.Errorf("pop p%d: %+v %v", i, p, err)
					return
				}
				m := p.Messages[0]
				res, err := x.b.Ack(ctx, []mq.AckItem{{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
					Group: mq.QueueMode, Status: "completed", LeaseID: p.LeaseID}})
				if err != nil || len(res) != 1 || !res[0].Success || res[0].AlreadyCommitted || *res[0].Partition != m.Partition {
					errc <- fmt.Errorf("ack of %s: %+v %v", m.TransactionID, res, err)
					return
				}
				mu.Lock()
				acked[m.TransactionID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(acked) != parts*rounds {
		t.Fatalf("%d messages acknowledged, want %d", len(acked), parts*rounds)
	}
	for k, c := range acked {
		if c != 1 {
			t.Fatalf("%s acknowledged %d times", k, c)
		}
	}
	calls, requests := x.b.acks.counts()
	t.Logf("%d acks in %d database calls", requests-reqs0, calls-calls0)
	if p := x.pop(mq.PopRequest{Queue: q, Batch: 10}); len(p.Messages) != 0 {
		t.Fatalf("left to deliver: %+v", p.Messages)
	}
}

// 50 single-message pops of one group, merged, get 50 distinct partitions: no partition leased
// twice, no message delivered twice; pops of other batch sizes in the same call each get at most
// their batch, from one partition of their own.
func TestMergedPopsGetDistinctPartitions(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: time.Hour})
	q := queueName(t)
	const parts, perPart = 60, 3
	var items []mq.PushItem
	for s := range perPart {
		for i := range parts {
			items = append(items, item(q, fmt.Sprintf("p%d", i), fmt.Sprintf("p%d-s%d", i, s), "1"))
		}
	}
	x.push(items...)

	release := holdConsumeGate(t, x)
	calls0, _ := x.b.pops.counts()
	const pops = 56 // 50 of batch 1, 6 of batch 3: two calls of at most maxPopCall
	got := make([]mq.PopResult, pops)
	errs := make([]error, pops)
	batch := func(i int) int {
		if i >= 50 {
			return 3
		}
		return 1
	}
	var wg sync.WaitGroup
	for i := range pops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = x.b.Pop(context.Background(), mq.PopRequest{Queue: q, Group: "g", Batch: batch(i)})
		}()
	}
	waitPending(t, x.b.pops, pops)
	release()
	wg.Wait()
	calls, _ := x.b.pops.counts()
	if want := int64((pops + maxPopCall - 1) / maxPopCall); calls-calls0 != want {
		t.Fatalf("%d pops in %d calls, want %d", pops, calls-calls0, want)
	}
	leases := map[string]bool{}
	partsSeen := map[string]int{}
	msgs := map[string]bool{}
	for i, p := range got {
		if errs[i] != nil || len(p.Messages) != batch(i) {
			t.Fatalf("pop %d (batch %d): %d messages, %v", i, batch(i), len(p.Messages), errs[i])
		}
		if leases[p.LeaseID] {
			t.Fatalf("lease %s handed out twice", p.LeaseID)
		}
		leases[p.LeaseID] = true
		for _, m := range p.Messages {
			if m.PartitionID != p.Messages[0].PartitionID {
				t.Fatalf("pop %d got two partitions", i)
			}
			if msgs[m.TransactionID] {
				t.Fatalf("%s delivered twice", m.TransactionID)
			}
			msgs[m.TransactionID] = true
		}
		partsSeen[p.Messages[0].PartitionID]++
	}
	for id, c := range partsSeen {
		if c != 1 {
			t.Fatalf("partition %s leased to %d pops", id, c)
		}
	}
	// Each pop acks what it got, under its own lease.
	for i, p := range got {
		items := make([]mq.AckItem, len(p.Messages))
		for k, m := range p.Messages {
			items[k] = mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: "g",
				Status: "completed", LeaseID: p.LeaseID}
		}
		res, err := x.b.Ack(context.Background(), items)
		if err != nil || !res[len(res)-1].Success || !res[len(res)-1].LeaseReleased {
			t.Fatalf("ack of pop %d: %+v %v", i, res, err)
		}
	}
}

// Parked long polls, woken by pushes, retry through the pop merger: every parked pop gets its
// message, none twice.
func TestParkedPopsAllWakeThroughTheMerger(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, PollInitial: time.Hour, PollMax: time.Hour})
	q := queueName(t)
	const n = 20
	x.push(item(q, "warm", "warm", "1")) // the queue exists, the pops register now
	if p := x.pop(mq.PopRequest{Queue: q, Batch: 1, AutoAck: true}); len(p.Messages) != 1 {
		t.Fatalf("warm-up pop: %+v", p)
	}
	before := x.b.Hub().Parked()
	out := make(chan popResult, n)
	for range n {
		go func() {
			res, err := x.b.Pop(context.Background(), mq.PopRequest{Queue: q, Batch: 1, AutoAck: true,
				Wait: true, Deadline: time.Now().Add(time.Minute)})
			out <- popResult{res, err}
		}()
	}
	x.waitParked(before + n)
	// Each pop's first attempt found nothing; let them all be parked with no attempt in flight.
	testkit.Eventually(t, 30*time.Second, time.Millisecond, func() error {
		if c, r := x.b.pops.counts(); r < int64(n+1) || c == 0 {
			return errors.New("first attempts still running")
		}
		return nil
	})
	pushEach(x, q, n)
	seen := map[string]bool{}
	for range n {
		select {
		case r := <-out:
			if r.err != nil || len(r.res.Messages) != 1 {
				t.Fatalf("woken pop: %+v %v", r.res, r.err)
			}
			k := r.res.Messages[0].TransactionID
			if seen[k] {
				t.Fatalf("%s delivered twice", k)
			}
			seen[k] = true
		case <-time.After(wakeBound):
			t.Fatalf("%d of %d parked pops not woken within %v (their fallback poll is an hour away)", n-len(seen), n, wakeBound)
		}
	}
}

// Concurrent pipeline stages merged into one transaction call, some of which must roll back (an
// expired lease, a duplicate push, an ack of a partition that does not exist): each failing one
// gets exactly the answer it gets alone and changes nothing, the others commit.
func TestMergedTransactionsFailAlone(t *testing.T) {
	x := newBroker(t, Config{ConsumeCalls: 1, ConsumeWait: time.Hour})
	q := queueName(t)
	sink := q + "-next"
	const n = 12
	pushEach(x, q, n)
	x.push(item(sink, "p0", "taken", "1")) // "taken" is a duplicate in the sink
	pops := popEach(t, x, q, n)
	db := rawDB(t)
	ctx := context.Background()
	// p0's lease has expired.
	if _, err := db.Exec(ctx, "UPDATE consumers SET lease_expires_at = now() - interval '1 second' WHERE partition_id = $1",
		pops[0].Messages[0].PartitionID); err != nil {
		t.Fatal(err)
	}
	stage := func(i int, key string) ([]mq.TxnEntry, []string) {
		m := pops[i].Messages[0]
		ack := mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID, Group: mq.QueueMode, Status: "completed"}
		return []mq.TxnEntry{{Ack: &ack}, {Push: item(sink, m.Partition, key, "2")}}, []string{pops[i].LeaseID}
	}
	type txn struct {
		entries []mq.TxnEntry
		leases  []string
	}
	txns := make([]txn, n)
	for i := range n {
		e, l := stage(i, fmt.Sprintf("next-%d", i))
		txns[i] = txn{e, l}
	}
	txns[1].entries[1].Push.Partition, txns[1].entries[1].Push.TransactionID = "p0", "taken" // QDUP
	unknown := *txns[2].entries[0].Ack
	unknown.PartitionID = newID() // no such partition: QTXN
	txns[2].entries[0].Ack = &unknown
	failing := []int{0, 1, 2}
	alone := map[int]string{}
	for _, i := range failing {
		out, err := x.b.Transaction(ctx, txns[i].entries, txns[i].leases, nil)
		if err != nil || out.Rollback == "" {
			t.Fatalf("failing stage %d alone: %+v %v", i, out, err)
		}
		alone[i] = out.Rollback
	}

	release := holdConsumeGate(t, x)
	calls0, reqs0 := x.b.txns.counts()
	outs := make([]mq.TxnOutcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = x.b.Transaction(ctx, txns[i].entries, txns[i].leases, nil)
		}()
		waitPending(t, x.b.txns, i+1)
	}
	release()
	wg.Wait()
	if calls, reqs := x.b.txns.counts(); calls-calls0 != 1 || reqs-reqs0 != n {
		t.Fatalf("%d transactions in %d calls, want %d in one", reqs-reqs0, calls-calls0, n)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("stage %d: %v", i, errs[i])
		}
		if want, bad := alone[i]; bad {
			if outs[i].Rollback != want {
				t.Fatalf("stage %d merged: rollback %q, alone %q", i, outs[i].Rollback, want)
			}
			continue
		}
		if outs[i].Rollback != "" || len(outs[i].Results) != 2 {
			t.Fatalf("stage %d merged: %+v", i, outs[i])
		}
	}
	// The sink holds "taken" and the outputs of the committed stages, nothing of the others;
	// the inputs of the failed stages are still unacknowledged.
	var keys []string
	rows, err := db.Query(ctx, `SELECT m.transaction_id FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queues qq ON qq.id = p.queue_id WHERE qq.name = $1 ORDER BY 1`, sink)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(keys) != 1+n-len(failing) {
		t.Fatalf("sink holds %v, want taken and %d outputs", keys, n-len(failing))
	}
	for _, k := range keys {
		for _, i := range failing {
			if k == fmt.Sprintf("next-%d", i) {
				t.Fatalf("output of failed stage %d committed", i)
			}
		}
	}
	var cursor int64
	for _, i := range failing {
		if err := db.QueryRow(ctx, "SELECT cursor FROM consumers WHERE partition_id = $1", pops[i].Messages[0].PartitionID).Scan(&cursor); err != nil {
			t.Fatal(err)
		}
		if cursor != 0 {
			t.Fatalf("input of failed stage %d acknowledged (cursor %d)", i, cursor)
		}
	}
}
