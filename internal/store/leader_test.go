package store

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// A job stopped while its statement runs lets that statement finish and gives its lock back
// before TryLead returns: another instance can lead at once (cutting the statement short
// would break the session and free the lock only when PostgreSQL notices, later).
func TestStoppedLeaderReleasesItsLockBeforeReturning(t *testing.T) {
	s, other := migratedSchema(t, "leader_stop"), openSchema(t, "leader_stop")
	for range 5 {
		ctx, stop := context.WithCancel(context.Background())
		led, err := s.TryLead(ctx, "stats", func(l *Leader) error {
			time.AfterFunc(20*time.Millisecond, stop)
			type text struct {
				V string `db:"v"`
			}
			if _, err := jobRow(ctx, l, readQuery[text]{"SELECT pg_sleep(0.1)::text AS v"}, nil); err != nil {
				return err
			}
			_, err := jobRow(ctx, l, readQuery[text]{"SELECT 'never' AS v"}, nil) // the job is stopped by now
			return err
		})
		stop()
		if !led || err == nil {
			t.Fatalf("led %v, err %v; want led and the stop reported", led, err)
		}
		ran, err := other.TryLead(context.Background(), "stats", func(*Leader) error { return nil })
		if err != nil || !ran {
			t.Fatalf("the other instance could not lead right after: ran=%v err=%v", ran, err)
		}
	}
}

// A job with a stretch starts a scheduled run only once that many times its latest run's
// duration has passed since the last start, however short its gap; without one, the gap alone
// decides, and a run a route asks for (gap 0) always starts.
func TestClaimSpacesRunsByTheirDuration(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "leader_stretch")
	ctx := context.Background()
	claim := func(gap time.Duration, stretch int) bool {
		t.Helper()
		var due bool
		led, err := s.TryLead(ctx, "stats", func(l *Leader) error {
			var err error
			due, err = l.Claim(ctx, "stats", gap, stretch, "w")
			return err
		})
		if err != nil || !led {
			t.Fatalf("lead: %v %v", led, err)
		}
		return due
	}
	if !claim(time.Microsecond, 10) {
		t.Fatal("the first run ever was not claimed")
	}
	// The run just claimed took a minute: with stretch 10 the next may start ten minutes after it.
	if err := s.RecordJobRun(ctx, mq.JobRun{Job: "stats", StartedAt: time.Now(), WorkerID: "w", Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if claim(time.Microsecond, 10) {
		t.Fatal("a run was claimed within ten times the last run's duration")
	}
	if !claim(time.Microsecond, 0) {
		t.Fatal("without a stretch, a run past the gap was not claimed")
	}
	if !claim(0, 10) {
		t.Fatal("a run asked for by a route was not claimed")
	}
}
