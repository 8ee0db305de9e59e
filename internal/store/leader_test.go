package store

import (
	"context"
	"testing"
	"time"
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
