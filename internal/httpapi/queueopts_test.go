package httpapi_test

// Queue options enforced at delivery and push (concepts.md §2.2, §6.1, §6.3, §10) and
// namespace/task pops.

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

func TestOptionDelayedProcessing(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"delayedProcessing": 10}})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(5 * time.Second)
	b.semPushKeys("pA", "a2")
	b.semPushKeys("pB", "b1")
	b.srv.Clock.Advance(4 * time.Second)
	b.semNoPop(b.semQ("batch=10"))
	b.srv.Clock.Advance(time.Second) // a1 is 10 s old, a2 and b1 5 s
	p := b.semMustPop(b.semQ("batch=10&partitions=2"), "a1")
	b.semMustAck(semAckOf(p, 0, "completed"))
	b.semNoPop(b.semQ("batch=10"))
	b.srv.Clock.Advance(5 * time.Second)
	b.semMustPop(b.semQP("pA", "batch=10"), "a2")
	b.semMustPop(b.semQP("pB", "batch=10"), "b1")
}

// A message that is not visible yet stops the batch even when a later one is visible (its
// createdAt can be older after a clock step backwards): later messages never overtake it.
func TestOptionDelayedProcessingNoOvertaking(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"delayedProcessing": 10}})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(10 * time.Second)
	b.semPushKeys("pA", "a2")
	b.srv.Clock.Advance(-10 * time.Second)
	b.semPushKeys("pA", "a3") // as old as a1
	b.srv.Clock.Advance(10 * time.Second)
	p := b.semMustPop(b.semQ("batch=10"), "a1")
	b.semMustAck(semAckOf(p, 0, "completed"))
	b.semNoPop(b.semQ("batch=10")) // a2 invisible: a3 must wait behind it
	b.srv.Clock.Advance(10 * time.Second)
	b.semMustPop(b.semQ("batch=10"), "a2", "a3")
}

func TestOptionWindowBuffer(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"windowBuffer": 10}})
	b.semPushKeys("pA", "a1")
	b.semPushKeys("pB", "b1")
	b.srv.Clock.Advance(6 * time.Second)
	b.semPushKeys("pA", "a2") // restarts pA's window
	b.srv.Clock.Advance(4 * time.Second)
	// pB's newest message is 10 s old, pA's only 4 s.
	b.semMustPop(b.semQ("batch=10&partitions=2&autoAck=true"), "b1")
	b.semNoPop(b.semQ("batch=10"))
	b.srv.Clock.Advance(5 * time.Second)
	b.semNoPop(b.semQ("batch=10"))
	b.srv.Clock.Advance(time.Second)
	b.semMustPop(b.semQ("batch=10"), "a1", "a2")
}

func TestOptionMaxSize(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"maxSize": 2}})
	other := b.queue + "-other"
	res := b.push("", obj{"queue": b.queue, "payload": 1, "transactionId": "a1"},
		obj{"queue": b.queue, "partition": "pB", "payload": 2, "transactionId": "b1"},
		obj{"queue": b.queue, "payload": 3, "transactionId": "a2"},
		obj{"queue": other, "payload": 4, "transactionId": "o1"},   // later items are still tried
		obj{"queue": b.queue, "payload": 5, "transactionId": "a1"}, // a taken key is a duplicate
		obj{"queue": b.queue, "partition": "pB", "payload": 6, "transactionId": "b2"})
	want := []string{"queued", "queued", "failed", "queued", "duplicate", "failed"}
	for i, r := range res {
		if r.Status != want[i] {
			t.Fatalf("item %d %+v, want %s", i, r, want[i])
		}
		if r.Status == "failed" && (r.Error != "queue full" || r.MessageID != "" || r.QueueName != b.queue) {
			t.Fatalf("item %d %+v", i, r)
		}
	}
	// Consuming frees capacity: a1 consumed by queue mode, its only consumer.
	p := b.semMustPop(b.semQP("Default", ""), "a1")
	if r := b.push("", obj{"queue": b.queue, "payload": 7, "transactionId": "a3"}); r[0].Status != "failed" {
		t.Fatalf("a leased message is still unconsumed: %+v", r[0])
	}
	b.semMustAck(semAckOf(p, 0, "completed"))
	if r := b.push("", obj{"queue": b.queue, "payload": 8, "transactionId": "a3"},
		obj{"queue": b.queue, "payload": 9, "transactionId": "a4"}); r[0].Status != "queued" || r[1].Status != "failed" {
		t.Fatalf("after consuming one: %+v", r)
	}
	// A group registering now is a consumer of every partition: b1 stays unconsumed until
	// every consumer of pB (queue mode has none) passed it.
	b.semMustPop(b.semQP("Default", "consumerGroup=g&autoAck=true&batch=10"), "a1", "a3")
	if r := b.push("pB", obj{"payload": 10, "transactionId": "b3"}); r[0].Status != "failed" {
		t.Fatalf("b1 is unconsumed by g, a3 by queue mode: %+v", r)
	}
	b.semMustPop(b.semQP("pB", "consumerGroup=g&autoAck=true"), "b1")
	if r := b.push("pB", obj{"payload": 11, "transactionId": "b3"}, obj{"payload": 12, "transactionId": "b4"}); r[0].Status != "queued" || r[1].Status != "failed" {
		t.Fatalf("only a3 is unconsumed: %+v", r)
	}
}

func TestOptionPriorityInNamespacePop(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	ns := b.queue
	low, high := ns+".low", ns+".high"
	b.semConfigure(low, obj{"options": obj{"priority": 1}})
	b.semConfigure(high, obj{"options": obj{"priority": 5}})
	b.push("", obj{"queue": low, "payload": 1, "transactionId": "l1"})
	b.srv.Clock.Advance(time.Second)
	b.push("", obj{"queue": high, "payload": 2, "transactionId": "h1"})
	b.srv.Clock.Advance(time.Second)
	b.push("", obj{"queue": high, "partition": "p2", "payload": 3, "transactionId": "h2"})
	path := "/api/v1/pop?namespace=" + url.QueryEscape(ns)
	// Higher priority first although its messages are newer; then oldest first.
	p := b.semMustPop(path+"&batch=10&partitions=3", "h1", "h2", "l1")
	if p.PartitionsClaimed != 3 || p.Queue != high || p.Messages[2].Queue != low || p.Messages[2].LeaseID != p.LeaseID {
		t.Fatalf("namespace pop %+v", p)
	}
}

func TestNamespaceTaskPopMatching(t *testing.T) {
	b := setup(t, testserver.Options{})
	ns := b.queue
	derived := ns + ".invoice.created" // namespace ns, task invoice
	plain := ns + ".shipping"          // namespace ns, task shipping
	labelled := ns + "-cfg.x"          // configured: namespace ns-N, task ns-T
	b.semConfigure(labelled, obj{"namespace": ns + "-N", "task": ns + "-T"})
	for _, q := range []string{derived, plain, labelled} {
		b.push("", obj{"queue": q, "payload": q, "transactionId": q})
	}
	pop := func(query string) []string {
		t.Helper()
		var got []string
		for {
			p, ok := b.pop("/api/v1/pop?" + query + "&autoAck=true&consumerGroup=" + url.QueryEscape(query))
			if !ok {
				slices.Sort(got)
				return got
			}
			got = append(got, semKeys(p)...)
		}
	}
	q := url.QueryEscape
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"namespace=" + q(ns), []string{derived, plain}},
		{"namespace=" + q(ns) + "&task=invoice", []string{derived}},
		{"namespace=" + q(ns) + "&task=created", nil},
		{"namespace=" + q(ns+"-cfg"), nil}, // configured labels replace the derived ones
		{"namespace=" + q(ns+"-N"), []string{labelled}},
		{"task=" + q(ns+"-T"), []string{labelled}},
		{"namespace=" + q(ns+"-N") + "&task=x", nil},
	} {
		if got := pop(tc.query); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
	// Configuring without labels returns to the derived ones.
	b.semConfigure(labelled, obj{})
	b.push("", obj{"queue": labelled, "payload": 1, "transactionId": "again"})
	if got := pop("namespace=" + q(ns+"-cfg") + "&task=x"); !slices.Equal(got, []string{"again", labelled}) {
		t.Fatalf("derived labels after reconfigure: %v", got)
	}
}
