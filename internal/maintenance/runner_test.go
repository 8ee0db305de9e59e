package maintenance_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testkit"
)

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

// testBundle is two broker instances' stores and runners on one schema of the test's own.
type testBundle struct {
	schema  string
	stores  [2]*store.Store
	runners [2]*maintenance.Runner
}

func setup(t *testing.T, cfg maintenance.Config) *testBundle {
	t.Helper()
	t.Parallel()
	ctx := context.Background()
	schema := fmt.Sprintf("mt_%d", time.Now().UnixNano())
	b := &testBundle{schema: schema}
	for i := range b.stores {
		st, err := store.Open(ctx, store.Options{DSN: testDSN, Schema: schema, MaxConns: 4, ConnectTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		b.stores[i] = st
		c := cfg
		c.WorkerID = fmt.Sprintf("w%d", i)
		b.runners[i] = maintenance.New(st, c, nil)
	}
	if err := b.stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

// While one instance holds a job's lock, the other cannot run that job, but can run the
// others; once the lock is released, it can.
func TestOneLeaderPerJob(t *testing.T) {
	b := setup(t, maintenance.Config{})
	ctx := context.Background()
	for _, job := range mq.JobNames {
		led, err := b.stores[0].TryLead(ctx, job, func(*store.Leader) error {
			for _, other := range mq.JobNames {
				ran, err := b.runners[1].RunOnce(ctx, other)
				if err != nil {
					t.Errorf("%s while %s is held: %v", other, job, err)
				}
				if ran != (other != job) {
					t.Errorf("%s ran=%v while instance 0 holds %s", other, ran, job)
				}
			}
			if _, ran, _ := b.runners[1].RefreshStats(ctx); ran != (job != mq.JobStats) {
				t.Errorf("stats refresh ran=%v while instance 0 holds %s", ran, job)
			}
			return nil
		})
		if err != nil || !led {
			t.Fatalf("hold %s: led=%v err=%v", job, led, err)
		}
		if st := b.runners[1].States()[job]; st.State != mq.JobStandby || st.Leader {
			t.Errorf("%s state of the instance that stood by: %+v", job, st)
		}
		if ran, err := b.runners[1].RunOnce(ctx, job); err != nil || !ran {
			t.Fatalf("%s after release: ran=%v err=%v", job, ran, err)
		}
		if st := b.runners[1].States()[job]; st.State != mq.JobIdle || !st.Leader || st.LastRunAt == nil {
			t.Errorf("%s state after leading: %+v", job, st)
		}
	}
}

// Two runners hammering the same job concurrently never run it at the same time: every
// attempt either runs alone or stands by.
func TestConcurrentRunnersNeverOverlap(t *testing.T) {
	b := setup(t, maintenance.Config{})
	ctx := context.Background()
	var running, overlaps, ran, skipped atomic.Int64
	var wg sync.WaitGroup
	for i := range b.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				// The lock is observed from inside: TryLead holds it exactly while fn runs.
				led, err := b.stores[i].TryLead(ctx, mq.JobStats, func(*store.Leader) error {
					if running.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(2 * time.Millisecond) // real elapsed time inside the lock, so leaders could overlap
					running.Add(-1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if led {
					ran.Add(1)
				} else {
					skipped.Add(1)
				}
				if _, err := b.runners[i].RunOnce(ctx, mq.JobStats); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping runs", overlaps.Load())
	}
	if ran.Load() == 0 || skipped.Load() == 0 {
		t.Logf("ran %d, skipped %d: no contention happened this time", ran.Load(), skipped.Load())
	}
}

// Start runs every job with an interval; Stop ends them and frees their locks for another
// instance at once.
func TestStartStopReleasesLocks(t *testing.T) {
	b := setup(t, maintenance.Config{RetentionInterval: time.Hour, EvictionInterval: time.Hour,
		LeaseHousekeepingInterval: 20 * time.Millisecond, StatsInterval: time.Hour,
		RetentionBatchSize: 100, EvictionBatchSize: 100, PartitionCleanupDays: 30,
		MetricsRetentionDays: 90, StatsHistoryRetentionDays: 7})
	b.runners[0].Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		states := b.runners[0].States()
		done := true
		for _, j := range mq.JobNames {
			if states[j].Runs == 0 {
				done = false
			}
			if states[j].LastError != "" {
				t.Fatalf("%s failed: %s", j, states[j].LastError)
			}
		}
		if done && states[mq.JobLeaseHousekeeping].Runs >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not all run: %+v", states)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval of a bounded wait
	}
	b.runners[0].Stop()
	for j, st := range b.runners[0].States() {
		if st.State != mq.JobStopped || st.Leader {
			t.Errorf("%s after Stop: %+v", j, st)
		}
	}
	for _, j := range mq.JobNames {
		if ran, err := b.runners[1].RunOnce(context.Background(), j); err != nil || !ran {
			t.Errorf("%s on the other instance after Stop: ran=%v err=%v", j, ran, err)
		}
	}
}

func TestUnknownJob(t *testing.T) {
	b := setup(t, maintenance.Config{})
	if _, err := b.runners[0].RunOnce(context.Background(), "vacuum"); err != maintenance.ErrUnknownJob {
		t.Fatalf("err %v, want ErrUnknownJob", err)
	}
}

// A job's interval holds across the cluster: an instance whose tick comes within the interval
// after another instance's run stands by, and a run asked for (RunOnce, the stats refresh route)
// runs anyway and counts as the latest run.
func TestScheduleHoldsAcrossInstances(t *testing.T) {
	cfg := maintenance.Config{StatsInterval: time.Hour, RetentionBatchSize: 100, EvictionBatchSize: 100}
	b := setup(t, cfg)
	ctx := context.Background()
	// waitState waits for the first scheduled stats run of runner i to end, as run or stood by.
	waitState := func(i int) mq.JobState {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			st := b.runners[i].States()[mq.JobStats]
			if st.State == mq.JobIdle || st.State == mq.JobStandby || st.State == mq.JobFailed {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("runner %d: stats never ran: %+v", i, st)
			}
		}
	}
	if err := b.runners[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.runners[0].Stop()
	if st := waitState(0); st.State != mq.JobIdle || st.Runs != 1 {
		t.Fatalf("first instance's scheduled run: %+v", st)
	}
	if err := b.runners[1].Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.runners[1].Stop()
	if st := waitState(1); st.State != mq.JobStandby || st.Runs != 0 || st.Leader {
		t.Fatalf("second instance's tick within the first one's interval: %+v, want standby", st)
	}
	if ran, err := b.runners[1].RunOnce(ctx, mq.JobStats); err != nil || !ran {
		t.Fatalf("RunOnce within the interval: ran=%v err=%v", ran, err)
	}
	if _, ran, err := b.runners[0].RefreshStats(ctx); err != nil || !ran {
		t.Fatalf("stats refresh within the interval: ran=%v err=%v", ran, err)
	}
}

// Retention runs at a twelfth of the shortest retention of any queue when that is shorter than
// RETENTION_INTERVAL, never below ten seconds, and at RETENTION_INTERVAL without such a queue:
// at 300 s, a queue keeping messages 120 s held up to 420 s of them before each run.
func TestRetentionIntervalFollowsTheShortestRetention(t *testing.T) {
	cfg := maintenance.Config{RetentionInterval: 5 * time.Minute, RetentionBatchSize: 100, EvictionBatchSize: 100}
	b := setup(t, cfg)
	ctx := context.Background()
	interval := func() time.Duration {
		t.Helper()
		if ran, err := b.runners[0].RunOnce(ctx, mq.JobRetention); err != nil || !ran {
			t.Fatalf("retention: ran=%v err=%v", ran, err)
		}
		return b.runners[0].Intervals()[mq.JobRetention]
	}
	if got := interval(); got != 5*time.Minute {
		t.Fatalf("without a queue with retention: %v, want RETENTION_INTERVAL", got)
	}
	for _, c := range []struct {
		name          string
		enabled       bool
		keep, keepAck int
		want          time.Duration
	}{
		{"a", true, 240, 0, 20 * time.Second},
		{"b", true, 0, 600, 20 * time.Second},    // a longer one changes nothing
		{"c", false, 20, 0, 20 * time.Second},    // nor one with retention off
		{"d", true, 20, 0, 10 * time.Second},     // the floor
		{"e", true, 0, 100000, 10 * time.Second}, // completed retention counts too
	} {
		o := mq.DefaultQueueOptions()
		o.RetentionEnabled, o.RetentionSeconds, o.CompletedRetentionSeconds = c.enabled, c.keep, c.keepAck
		if _, _, err := b.stores[0].Configure(ctx, c.name, "", "", o); err != nil {
			t.Fatal(err)
		}
		if got := interval(); got != c.want {
			t.Fatalf("after queue %s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The schedule reads retention's cadence every ten seconds, not once per RETENTION_INTERVAL: a
// queue configured with a short retention after a run gets the next run within that, though
// the configured interval (an hour here) is far off.
func TestRetentionLoopServesANewShortRetentionWithinItsLook(t *testing.T) {
	cfg := maintenance.Config{RetentionInterval: time.Hour, RetentionBatchSize: 100, EvictionBatchSize: 100}
	b := setup(t, cfg)
	ctx := context.Background()
	r := b.runners[0]
	runs := func(want int64) error {
		if st := r.States()[mq.JobRetention]; st.Runs < want {
			return fmt.Errorf("retention ran %d times, want %d: %+v", st.Runs, want, st)
		}
		return nil
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error { return runs(1) })
	o := mq.DefaultQueueOptions()
	o.RetentionEnabled, o.RetentionSeconds = true, 40 // a cadence of 10 s
	if _, _, err := b.stores[0].Configure(ctx, "short", "", "", o); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error { return runs(2) })
}
