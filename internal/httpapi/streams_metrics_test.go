package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// A stream cycle's sink pushes and source ack count in the push and ack figures
// (docs/api/admin-api.md §11; the broker's Recorder.Cycled).
func TestS58_CyclesCountAsPushesAndAcks(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	s := newStream(t, b, 3) // one push request of 3 messages, one pop
	sink := b.queue + ".sink"
	r := s.cycle(s.body(obj{"ack": s.ackOf(1), "release_lease": false,
		"push_items": []obj{{"queue": sink, "payload": 1}, {"queue": sink, "payload": 2}}}))
	if !r.Success || len(r.PushResults) != 2 {
		t.Fatalf("cycle: %+v", r)
	}
	ack := s.ackOf(2)
	ack["status"] = "dlq"
	if r := s.cycle(s.body(obj{"ack": ack, "release_lease": false})); !r.Success || !r.AckResult.DLQ {
		t.Fatalf("dlq cycle: %+v", r)
	}
	if err := b.srv.Metrics.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.stRun(mq.JobStats)
	b.srv.Clock.Advance(time.Minute)

	mfs := scrape(t, b.srv.URL)
	for _, w := range []struct {
		family string
		labels []string
		value  float64
	}{
		{"queen_cluster_push_requests_total", []string{"scope", "cluster"}, 2},
		{"queen_cluster_push_messages_total", []string{"scope", "cluster"}, 5},
		{"queen_cluster_ack_requests_total", []string{"scope", "cluster"}, 2},
		{"queen_cluster_ack_messages_total", []string{"scope", "cluster"}, 2},
		{"queen_cluster_ack_total", []string{"scope", "cluster", "result", "success"}, 1},
		{"queen_cluster_ack_total", []string{"scope", "cluster", "result", "failed"}, 1},
		{"queen_cluster_dlq_total", []string{"scope", "cluster"}, 1},
		{"queen_queue_push_messages_per_minute", []string{"queue", sink}, 2},
		{"queen_queue_push_requests_per_minute", []string{"queue", sink}, 1},
		{"queen_queue_ack_per_minute", []string{"queue", b.queue, "result", "success"}, 1},
		{"queen_queue_ack_per_minute", []string{"queue", b.queue, "result", "failed"}, 1},
	} {
		if got, ok := sample(mfs, w.family, w.labels...); !ok || got != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.family, w.labels, got, ok, w.value)
		}
	}
}
