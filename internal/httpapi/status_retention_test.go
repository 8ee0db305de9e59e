package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/testserver"
)

// Retention (concepts.md §11) driven by the test clock: the job runs when the test says, with
// "now" where the test put it.

// Consumed messages older than completedRetentionSeconds go; unconsumed ones stay, whatever
// their age; the removal is recorded; a removed message's key stays taken until its window ends.
func TestRetentionRemovesConsumedMessages(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"retentionEnabled": true, "completedRetentionSeconds": 60, "dedupWindowSeconds": 120})
	b.admPushKeys("p", "a", "b", "c")
	b.admAckAll(b.admPop("p", "", 2), "completed", "")

	b.srv.Clock.Advance(59 * time.Second)
	b.stRun(maintenance.Retention)
	if got := b.stStored(); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("before completedRetentionSeconds: stored %v, want all three", got)
	}

	b.srv.Clock.Advance(2 * time.Second)
	b.stRun(maintenance.Retention)
	if got := b.stStored(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("stored %v, want only the unconsumed c", got)
	}
	want := []stRetention{{Queue: b.queue, Partition: "p", Type: "completed_retention", Removed: 2}}
	if got := b.stHistory(); !slices.Equal(got, want) {
		t.Fatalf("retention history %+v, want %+v", got, want)
	}
	if r := b.admPushKeys("p", "a")[0]; r.Status != "duplicate" {
		t.Fatalf("re-push of a removed key inside its window: %q, want duplicate", r.Status)
	}
	if got := admKeys(b.admPop("p", "", 10)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("pop after retention: %v, want [c]", got)
	}

	b.srv.Clock.Advance(60 * time.Second) // a's window (120 s from its creation) has ended
	b.stRun(maintenance.Retention)
	if r := b.admPushKeys("p", "a")[0]; r.Status != "queued" {
		t.Fatalf("re-push of a removed key after its window: %q, want queued", r.Status)
	}
}

// retentionSeconds removes old messages consumed or not, and says how many were unconsumed;
// a message in a live leased batch is left alone and can still be acked.
func TestRetentionSecondsSparesLiveBatches(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"retentionEnabled": true, "retentionSeconds": 60, "leaseTime": 600})
	b.admPushKeys("p", "a", "b", "c")
	b.admPushKeys("q", "x", "y")
	held := b.admPop("p", "", 1) // a, leased for 600 s

	b.srv.Clock.Advance(61 * time.Second)
	b.stRun(maintenance.Retention)
	if got := b.stStored(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("stored %v, want only a, which a live lease holds", got)
	}
	want := []stRetention{
		{Queue: b.queue, Partition: "p", Type: "retention", Removed: 2, Unconsumed: 2},
		{Queue: b.queue, Partition: "q", Type: "retention", Removed: 2, Unconsumed: 2},
	}
	if got := b.stHistory(); !slices.Equal(got, want) {
		t.Fatalf("retention history %+v, want %+v", got, want)
	}
	b.admAckAll(held, "completed", "")
	if r := b.admPushKeys("q", "x")[0]; r.Status != "duplicate" {
		t.Fatalf("re-push of a removed key: %q, want duplicate", r.Status)
	}
}

// Without retentionEnabled neither rule applies, however old the messages.
func TestRetentionNeedsRetentionEnabled(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"retentionSeconds": 1, "completedRetentionSeconds": 1})
	b.admPushKeys("p", "a", "b")
	b.admAckAll(b.admPop("p", "", 1), "completed", "")
	b.srv.Clock.Advance(time.Hour)
	b.stRun(maintenance.Retention)
	if got := b.stStored(); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("stored %v, want both messages", got)
	}
	if got := b.stHistory(); len(got) != 0 {
		t.Fatalf("retention history %+v, want none", got)
	}
}

// Empty partitions idle for PARTITION_CLEANUP_DAYS go; partitions that hold messages stay.
func TestRetentionDeletesIdleEmptyPartitions(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{}) // creates the empty Default partition
	b.admPushKeys("p", "a")
	partitions := func() []string {
		q := stGet[struct {
			Partitions []struct {
				Name string `json:"name"`
			} `json:"partitions"`
		}](b, "/api/v1/status/queues/"+b.queue, http.StatusOK)
		var out []string
		for _, p := range q.Partitions {
			out = append(out, p.Name)
		}
		return out
	}
	b.srv.Clock.Advance(29 * 24 * time.Hour)
	b.stRun(maintenance.Retention)
	if got := partitions(); !slices.Equal(got, []string{"Default", "p"}) {
		t.Fatalf("after 29 days: partitions %v, want both", got)
	}
	b.srv.Clock.Advance(2 * 24 * time.Hour)
	b.stRun(maintenance.Retention)
	if got := partitions(); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("after 31 days: partitions %v, want only p", got)
	}
}

// Batches of one message: the job drains batch after batch, and partitions with nothing due
// (here: no consumer, so nothing is consumed) neither stop it nor use up its batches.
func TestRetentionDrainsInSmallBatches(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true, Maintenance: &maintenance.Config{
		RetentionBatchSize: 1, EvictionBatchSize: 1, PartitionCleanupDays: 30, MetricsRetentionDays: 90,
		StatsHistoryRetentionDays: 7}})
	b.configure(obj{"retentionEnabled": true, "completedRetentionSeconds": 60})
	for i := range 5 {
		b.admPushKeys(fmt.Sprintf("unread%d", i), fmt.Sprintf("u%d", i))
	}
	b.admPushKeys("p", "a", "b", "c")
	b.admAckAll(b.admPop("p", "", 3), "completed", "")
	b.srv.Clock.Advance(61 * time.Second)
	b.stRun(maintenance.Retention)
	for _, k := range b.stStored() {
		if k == "a" || k == "b" || k == "c" {
			t.Fatalf("consumed message %s survived retention; stored %v", k, b.stStored())
		}
	}
	if got := b.stStored(); len(got) != 5 {
		t.Fatalf("stored %v, want the five unread messages", got)
	}
	want := []stRetention{{Queue: b.queue, Partition: "p", Type: "completed_retention", Removed: 3}}
	if got := b.stHistory(); !slices.Equal(got, want) {
		t.Fatalf("retention history %+v, want one run of 3 (batches of one add up)", got)
	}
}
