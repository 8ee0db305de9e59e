package httpapi_test

// The queue options enforced at delivery and push (docs/api/concepts.md §2.2, §6.1, §6.3, §10) and
// namespace/task pops are tested where the SQL decides them: internal/store/pop_test.go and
// push_test.go. What stays here is the wire: a full queue's item in a push answer, the
// namespace/task query parameters, and the labels a configure without them derives.

import (
	"net/url"
	"slices"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

func TestOptionMaxSizeAnswer(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"maxSize": 1}})
	res := b.push("", obj{"queue": b.queue, "payload": 1, "transactionId": "a1"},
		obj{"queue": b.queue, "payload": 2, "transactionId": "a2"})
	if res[0].Status != "queued" || res[1].Status != "failed" || res[1].Error != "queue full" ||
		res[1].MessageID != "" || res[1].QueueName != b.queue {
		t.Fatalf("push answer %+v", res)
	}
}

func TestNamespaceTaskPopMatching(t *testing.T) {
	b := setup(t, testserver.Options{})
	ns := b.queue
	labelled := ns + "-cfg.x" // configured: namespace ns-N, task ns-T
	b.semConfigure(labelled, obj{"namespace": ns + "-N", "task": ns + "-T"})
	b.push("", obj{"queue": labelled, "payload": 1, "transactionId": "first"})
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
	if got := pop("namespace=" + q(ns+"-N") + "&task=" + q(ns+"-T")); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("configured labels: %v", got)
	}
	// Configuring without labels returns to the derived ones.
	b.semConfigure(labelled, obj{})
	b.push("", obj{"queue": labelled, "payload": 1, "transactionId": "again"})
	if got := pop("namespace=" + q(ns+"-cfg") + "&task=x"); !slices.Equal(got, []string{"again", "first"}) {
		t.Fatalf("derived labels after reconfigure: %v", got)
	}
}
