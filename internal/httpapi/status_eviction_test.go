package httpapi_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/testserver"
)

// Eviction (concepts.md §11): unconsumed messages older than maxWaitTimeSeconds are
// dead-lettered — once for every consumer that had not consumed them, under __QUEUE_MODE__
// when the partition has none — and removed; never silently, never from a live leased batch.
func TestEvictionDeadLettersThenRemoves(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"maxWaitTimeSeconds": 30, "leaseTime": 600})
	b.admPushKeys("shared", "s1", "s2", "s3")
	held := b.admPop("shared", "", 1)                           // queue mode leases s1 for 600 s
	b.admAckAll(b.admPop("shared", "g1", 2), "completed", "g1") // g1 consumed s1 and s2
	// Created after g1 registered, so no group has a cursor on it (concepts.md §5.3).
	b.admPushKeys("lonely", "l1", "l2")

	b.srv.Clock.Advance(31 * time.Second)
	b.admPushKeys("lonely", "fresh") // not yet 30 s old when the job runs
	b.stRun(maintenance.Eviction)

	if got := b.stStored(); !slices.Equal(got, []string{"fresh", "s1"}) {
		t.Fatalf("stored %v, want [fresh s1]: s1 is in a live leased batch, fresh is young", got)
	}
	entries, total, _ := b.admDLQ("?queue=" + b.queue)
	var got []string
	for _, e := range entries {
		if e["errorMessage"] != "Max wait time exceeded" {
			t.Errorf("DLQ entry %v: errorMessage %v", e["transactionId"], e["errorMessage"])
		}
		got = append(got, fmt.Sprintf("%v/%v", e["transactionId"], e["consumerGroup"]))
	}
	sort.Strings(got)
	want := []string{"l1/__QUEUE_MODE__", "l2/__QUEUE_MODE__", "s2/__QUEUE_MODE__", "s3/__QUEUE_MODE__", "s3/g1"}
	if !slices.Equal(got, want) || total != int64(len(want)) {
		t.Fatalf("DLQ entries %v (total %d), want %v", got, total, want)
	}
	history := b.stHistory()
	sort.Slice(history, func(i, j int) bool { return history[i].Partition < history[j].Partition })
	wantHistory := []stRetention{
		{Queue: b.queue, Partition: "lonely", Type: "max_wait_time_eviction", Removed: 2, DeadLettered: 2},
		{Queue: b.queue, Partition: "shared", Type: "max_wait_time_eviction", Removed: 2, DeadLettered: 3},
	}
	if !slices.Equal(history, wantHistory) {
		t.Fatalf("retention history %+v, want %+v", history, wantHistory)
	}

	b.admAckAll(held, "completed", "") // the spared batch is still the holder's to ack
	if r := b.admPushKeys("lonely", "l1")[0]; r.Status != "duplicate" {
		t.Fatalf("re-push of an evicted key inside its window: %q, want duplicate", r.Status)
	}
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/shared?consumerGroup=g1"); ok {
		t.Fatal("g1 received a message after its unconsumed ones were evicted")
	}
}

// Without maxWaitTimeSeconds nothing is evicted, however old.
func TestEvictionNeedsMaxWaitTime(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.admPushKeys("p", "a")
	b.srv.Clock.Advance(24 * time.Hour)
	b.stRun(maintenance.Eviction)
	if got := b.stStored(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("stored %v, want [a]", got)
	}
	if _, total, _ := b.admDLQ("?queue=" + b.queue); total != 0 {
		t.Fatalf("DLQ holds %d entries, want none", total)
	}
}
