package app_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// failoverLoad is a workload of producers and consumers over HTTP that records what the
// broker acknowledged: every push answered 201 (written or spooled), every delivery, and every
// ack the broker answered as committed. Its checks are the promises of a broker whose database
// fails over: no acknowledged push lost, no delivery after a committed ack, order kept per
// partition and consumer group.
//
// Producer w pushes keys w-000000, w-000001, … to partition p<w>, one push at a time, and
// retries a key until it is acknowledged (as a client with idempotent keys does): every
// partition's keys are thus acknowledged in order, without gaps.
type failoverLoad struct {
	base, queue string
	producers   int
	groups      []string

	stopProducers, stopConsumers chan struct{}
	producersWG, consumersWG     sync.WaitGroup

	mu         sync.Mutex
	acked      map[string]string // key → status of its acknowledged push (queued, duplicate, buffered)
	ackedAt    map[string]time.Time
	nextSeq    []int // per producer: the first key not yet acknowledged
	deliveries []delivery
	committed  map[groupKey]time.Time // when the broker answered the ack as committed
	unexpected []string               // answers no failover explains (a 4xx, a failed push)
	answers    map[string]int         // count per route and status, for the log

	// stalled is set when the test stalls replication; a push sent after that (the flag read
	// under mu before the request) and answered counts in answeredAfterStall, per producer.
	stalled            bool
	answeredAfterStall []int
}

type groupKey struct{ group, key string }

// delivery is one message in a pop's answer; sent is when the pop was sent.
type delivery struct {
	group, partition, key string
	sent                  time.Time
}

func newFailoverLoad(base, queue string, producers int, groups ...string) *failoverLoad {
	return &failoverLoad{base: base, queue: queue, producers: producers, groups: groups,
		stopProducers: make(chan struct{}), stopConsumers: make(chan struct{}),
		acked: map[string]string{}, ackedAt: map[string]time.Time{}, nextSeq: make([]int, producers),
		committed: map[groupKey]time.Time{}, answers: map[string]int{}, answeredAfterStall: make([]int, producers)}
}

func loadKey(w, seq int) string { return fmt.Sprintf("%d-%06d", w, seq) }

// keySeq returns the producer and sequence number of a key.
func keySeq(key string) (w, seq int) {
	a, b, _ := strings.Cut(key, "-")
	w, _ = strconv.Atoi(a)
	seq, _ = strconv.Atoi(b)
	return w, seq
}

// startProducers runs the producers.
func (l *failoverLoad) startProducers() {
	for w := range l.producers {
		l.producersWG.Go(func() { l.produce(w) })
	}
}

// startConsumers runs n consumers in each of groups (some of l.groups: a group may start
// late, to read what the database holds then).
func (l *failoverLoad) startConsumers(n int, groups ...string) {
	for _, g := range groups {
		for range n {
			l.consumersWG.Go(func() { l.consume(g) })
		}
	}
}

// stall marks the moment replication is stalled: pushes sent from now on count as after it.
func (l *failoverLoad) stall() {
	l.mu.Lock()
	l.stalled = true
	l.mu.Unlock()
}

// answeredAfterStallAtLeast reports whether every producer has had n pushes sent after the
// stall answered, whatever the answer; mu held.
func (l *failoverLoad) answeredAfterStallAtLeast(n int) bool {
	for _, c := range l.answeredAfterStall {
		if c < n {
			return false
		}
	}
	return true
}

func (l *failoverLoad) count(what string) {
	l.mu.Lock()
	l.answers[what]++
	l.mu.Unlock()
}

func (l *failoverLoad) produce(w int) {
	for seq := 0; ; {
		select {
		case <-l.stopProducers:
			return
		default:
		}
		key := loadKey(w, seq)
		l.mu.Lock()
		afterStall := l.stalled
		l.mu.Unlock()
		r := call(l.base, "POST", "/api/v1/push", itemsBody(l.queue, fmt.Sprintf("p%d", w), key))
		if afterStall {
			l.mu.Lock()
			l.answeredAfterStall[w]++
			l.mu.Unlock()
		}
		if r.code != 201 {
			l.count(fmt.Sprintf("push %d", r.code))
			if r.code != 503 && r.err == nil {
				l.unexpect(fmt.Sprintf("push %s: %d %s", key, r.code, r.body))
				return
			}
			backoff()
			continue
		}
		var items []struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.body), &items); err != nil || len(items) != 1 {
			l.unexpect(fmt.Sprintf("push %s: 201 %s", key, r.body))
			return
		}
		switch st := items[0].Status; st {
		case "queued", "duplicate", "buffered":
			l.count("push 201 " + st)
			l.mu.Lock()
			l.acked[key], l.ackedAt[key] = st, time.Now()
			l.nextSeq[w] = seq + 1
			l.mu.Unlock()
			seq++
		default:
			l.unexpect(fmt.Sprintf("push %s: 201 %s", key, r.body))
			return
		}
	}
}

// backoff spaces the retries of a request answered 503: a client's pause, not an ordering.
func backoff() { <-time.After(20 * time.Millisecond) }

func (l *failoverLoad) unexpect(s string) {
	l.mu.Lock()
	l.unexpected = append(l.unexpected, s)
	l.mu.Unlock()
}

type poppedMessage struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Partition     string `json:"partition"`
	LeaseID       string `json:"leaseId"`
}

func (l *failoverLoad) consume(group string) {
	path := fmt.Sprintf("/api/v1/pop/queue/%s?consumerGroup=%s&batch=10&wait=true&timeout=1000", l.queue, group)
	for {
		select {
		case <-l.stopConsumers:
			return
		default:
		}
		sent := time.Now()
		r := call(l.base, "GET", path, nil)
		l.count(fmt.Sprintf("pop %d", r.code))
		switch {
		case r.code == 204:
			continue
		case r.code == 503 || r.err != nil:
			backoff()
			continue
		case r.code != 200:
			l.unexpect(fmt.Sprintf("pop: %d %s", r.code, r.body))
			return
		}
		var body struct {
			Messages []poppedMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(r.body), &body); err != nil || len(body.Messages) == 0 {
			l.unexpect(fmt.Sprintf("pop: 200 %s", r.body))
			return
		}
		acks := make([]any, len(body.Messages))
		l.mu.Lock()
		for i, m := range body.Messages {
			l.deliveries = append(l.deliveries, delivery{group: group, partition: m.Partition, key: m.TransactionID, sent: sent})
			acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": m.LeaseID, "status": "completed"}
		}
		l.mu.Unlock()
		a := call(l.base, "POST", "/api/v1/ack/batch", map[string]any{"consumerGroup": group, "acknowledgments": acks})
		l.count(fmt.Sprintf("ack %d", a.code))
		if a.code != 200 {
			if a.code != 503 && a.err == nil {
				l.unexpect(fmt.Sprintf("ack: %d %s", a.code, a.body))
				return
			}
			continue // not committed, or committed unbeknown: the checks allow both
		}
		var results []struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal([]byte(a.body), &results); err != nil || len(results) != len(acks) {
			l.unexpect(fmt.Sprintf("ack: 200 %s", a.body))
			return
		}
		now := time.Now()
		l.mu.Lock()
		for i, res := range results {
			if res.Success {
				k := groupKey{group, body.Messages[i].TransactionID}
				if _, ok := l.committed[k]; !ok {
					l.committed[k] = now
				}
			} else {
				// An expired lease (the pop's lease ran out across the failover): the
				// message is delivered again, which is allowed for an uncommitted ack.
				l.answers["ack rejected: "+res.Error]++
			}
		}
		l.mu.Unlock()
	}
}

// figures returns how many pushes were acknowledged, how many of them spooled, and how many
// acks committed.
func (l *failoverLoad) figures() (acked, buffered, committed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.acked {
		if st == "buffered" {
			buffered++
		}
	}
	return len(l.acked), buffered, len(l.committed)
}

// waitFor polls cond (under the load's lock) until it holds, failing the test after limit.
func (l *failoverLoad) waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		l.mu.Lock()
		ok, unexpected := cond(), append([]string(nil), l.unexpected...)
		l.mu.Unlock()
		if len(unexpected) > 0 {
			t.Fatalf("waiting for %s: unexpected answers: %v", what, unexpected)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v; answers so far: %v", what, limit, l.answerCounts())
		}
		<-time.After(20 * time.Millisecond)
	}
}

// lastDelivered reports whether every producer's last acknowledged push was delivered to
// every group; mu held. Since each group receives a partition in push order, every earlier
// push the database holds was delivered by then: what is still missing is lost, not late.
func (l *failoverLoad) lastDelivered() bool {
	seen := map[groupKey]bool{}
	for _, d := range l.deliveries {
		seen[groupKey{d.group, d.key}] = true
	}
	for w, next := range l.nextSeq {
		if next == 0 {
			continue
		}
		for _, g := range l.groups {
			if !seen[groupKey{g, loadKey(w, next-1)}] {
				return false
			}
		}
	}
	return true
}

func (l *failoverLoad) answerCounts() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.answers))
	for k := range l.answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %d; ", k, l.answers[k])
	}
	return b.String()
}

// failoverFindings are the broken promises a failoverLoad found, each a list of examples.
type failoverFindings struct {
	lost, afterAck, reordered, wrongPartition, unexpected []string
	// summary gives the load's figures, for the log.
	summary string
}

// check asserts the promises once everything was delivered: no acknowledged push lost, no
// delivery sent after its ack was answered as committed, and in each group every partition's
// messages first delivered in push order (a redelivery of an uncommitted batch is not a first
// delivery).
func (l *failoverLoad) check(t *testing.T) {
	t.Helper()
	f := l.findings()
	for _, f := range []struct {
		what string
		list []string
	}{{"acknowledged pushes never delivered", f.lost}, {"deliveries after a committed ack", f.afterAck},
		{"deliveries out of push order", f.reordered}, {"deliveries from the wrong partition", f.wrongPartition},
		{"unexpected answers", f.unexpected}} {
		if len(f.list) > 0 {
			t.Errorf("%d %s, e.g. %v", len(f.list), f.what, f.list[:min(len(f.list), 10)])
		}
	}
	t.Log(f.summary)
}

// findings checks the load's records against the promises (see check).
func (l *failoverLoad) findings() failoverFindings {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[groupKey]bool{}
	last := map[string]int{} // group/partition → last first-delivered sequence number
	var afterAck, reordered, wrongPartition []string
	redelivered := 0
	for _, d := range l.deliveries {
		k := groupKey{d.group, d.key}
		if at, ok := l.committed[k]; ok && d.sent.After(at) {
			afterAck = append(afterAck, fmt.Sprintf("%s to %s (ack committed %v before the pop)", d.key, d.group, d.sent.Sub(at)))
		}
		if seen[k] {
			redelivered++
			continue
		}
		seen[k] = true
		w, seq := keySeq(d.key)
		if d.partition != fmt.Sprintf("p%d", w) {
			wrongPartition = append(wrongPartition, d.key+" from "+d.partition)
		}
		pk := d.group + "/" + d.partition
		if prev, ok := last[pk]; ok && seq <= prev {
			reordered = append(reordered, fmt.Sprintf("%s: %s after %s", d.group, d.key, loadKey(w, prev)))
		}
		last[pk] = seq
	}
	var lost []string
	for key := range l.acked {
		for _, g := range l.groups {
			if !seen[groupKey{g, key}] {
				lost = append(lost, fmt.Sprintf("%s (%s, for %s)", key, l.acked[key], g))
			}
		}
	}
	sort.Strings(lost)
	return failoverFindings{lost: lost, afterAck: afterAck, reordered: reordered, wrongPartition: wrongPartition,
		unexpected: append([]string(nil), l.unexpected...),
		summary: fmt.Sprintf("%d acknowledged pushes, %d deliveries (%d redeliveries), %d committed acks",
			len(l.acked), len(l.deliveries), redelivered, len(l.committed))}
}
