package httpapi_test

import (
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// The eviction rules (docs/api/concepts.md §11) are tested where the SQL decides them:
// internal/store/retention_test.go. What stays here is the wire: an eviction run shows in the
// DLQ listing with its errorMessage and in the retention analytics with deadLettered.
func TestEvictionRunShowsInDLQAndAnalytics(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"maxWaitTimeSeconds": 30})
	b.admPushKeys("p", "a")
	b.srv.Clock.Advance(31 * time.Second)
	b.stRun(mq.JobEviction)
	entries, total, _ := b.admDLQ("?queue=" + b.queue)
	if total != 1 || len(entries) != 1 || entries[0]["transactionId"] != "a" ||
		entries[0]["consumerGroup"] != "__QUEUE_MODE__" || entries[0]["errorMessage"] != "Max wait time exceeded" {
		t.Fatalf("DLQ entries %v (total %d)", entries, total)
	}
	want := []stRetention{{Queue: b.queue, Partition: "p", Type: "max_wait_time_eviction", Removed: 1, DeadLettered: 1}}
	if got := b.stHistory(); !slices.Equal(got, want) {
		t.Fatalf("retention history %+v, want %+v", got, want)
	}
}
