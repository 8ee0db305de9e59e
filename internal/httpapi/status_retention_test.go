package httpapi_test

import (
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// The retention rules (docs/api/concepts.md §11) are tested where the SQL decides them:
// internal/store/retention_test.go. What stays here is the wire: a run of the job shows in the
// stored messages and in GET /api/v1/analytics/retention with its fields.
func TestRetentionRunShowsInAnalytics(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.configure(obj{"retentionEnabled": true, "retentionSeconds": 60})
	b.admPushKeys("p", "a", "b")
	b.srv.Clock.Advance(61 * time.Second)
	b.stRun(mq.JobRetention)
	if got := b.stStored(); len(got) != 0 {
		t.Fatalf("stored %v, want none", got)
	}
	want := []stRetention{{Queue: b.queue, Partition: "p", Type: "retention", Removed: 2, Unconsumed: 2}}
	if got := b.stHistory(); !slices.Equal(got, want) {
		t.Fatalf("retention history %+v, want %+v", got, want)
	}
}
