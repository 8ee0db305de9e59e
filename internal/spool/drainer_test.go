package spool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
)

// fakeDB is the injected WriteFunc: a table keyed like messages' unique key, failing its
// first failures calls.
type fakeDB struct {
	mu       sync.Mutex
	failures int
	calls    int
	keys     map[string]bool
	rows     []string // message ids in write order
	batches  []int
}

func (db *fakeDB) write(_ context.Context, recs []Record) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.calls++
	if db.calls <= db.failures {
		return 0, errors.New("database unavailable")
	}
	dups := 0
	for _, r := range recs {
		if db.keys[r.Key] {
			dups++
			continue
		}
		db.keys[r.Key] = true
		db.rows = append(db.rows, r.MessageID)
	}
	db.batches = append(db.batches, len(recs))
	return dups, nil
}

func (db *fakeDB) snapshot() []string {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.rows)
}

// drainAll starts d, waits until s holds nothing, and stops d.
func drainAll(t *testing.T, d *Drainer, s *Spool) {
	t.Helper()
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	waitEmpty(t, s)
}

// waitEmpty waits until s holds nothing.
func waitEmpty(t *testing.T, s *Spool) {
	t.Helper()
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		if p := s.Pending(); p != 0 {
			return fmt.Errorf("%d pending", p)
		}
		return nil
	})
}

// A failing batch is retried with growing back-off, capped, never skipped; afterwards every
// record is written exactly once, in order, and duplicates are counted.
func TestDrainerRetriesInOrderExactlyOnce(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{EventsPerFile: 10})
	var want []string
	for i := range 25 {
		r := rec("p", i)
		appendOK(t, s, r)
		if i != 6 {
			want = append(want, r.MessageID)
		}
	}
	db := &fakeDB{failures: 9, keys: map[string]bool{"k-p-6": true}} // p-6 committed before a crash
	var mu sync.Mutex
	var sleeps []time.Duration
	var failedSeen []int
	var d *Drainer
	d = NewDrainer(s, DrainerOptions{
		Write:         db.write,
		FlushInterval: 100 * time.Millisecond,
		MaxBatch:      4,
		Sleep: func(ctx context.Context, dur time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			sleeps = append(sleeps, dur)
			failedSeen = append(failedSeen, d.Stats().Failed)
			return ctx.Err() == nil
		},
	})
	drainAll(t, d, s)
	if got := db.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("written %v,\nwant %v", got, want)
	}
	ms := time.Millisecond
	wantSleeps := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms, 5000 * ms}
	if !slices.Equal(sleeps, wantSleeps) {
		t.Fatalf("back-off %v, want %v", sleeps, wantSleeps)
	}
	for _, f := range failedSeen {
		if f != 4 {
			t.Fatalf("Failed while the first batch fails = %v, want 4 each time", failedSeen)
		}
	}
	if !slices.Equal(db.batches, []int{4, 4, 4, 4, 4, 4, 1}) {
		t.Errorf("batches %v, want MaxBatch each", db.batches)
	}
	st := d.Stats()
	if st != (DrainStats{Pending: 0, Failed: 0, Replayed: 25, Duplicates: 1}) {
		t.Fatalf("stats %+v", st)
	}
}

// The drain waits for its gate; a Kick starts it at once.
func TestDrainerWaitsForReady(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	for i := range 5 {
		appendOK(t, s, rec("p", i))
	}
	db := &fakeDB{keys: map[string]bool{}}
	var ready atomic.Bool
	d := NewDrainer(s, DrainerOptions{Write: db.write, Ready: ready.Load, FlushInterval: time.Hour, MaxBatch: 2})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	time.Sleep(20 * time.Millisecond) // real elapsed time for a negative check: nothing may be written
	if got := db.snapshot(); len(got) != 0 {
		t.Fatalf("written while not ready: %v", got)
	}
	ready.Store(true)
	d.Kick()
	waitEmpty(t, s)
	if got := db.snapshot(); !slices.Equal(got, names(0, 1, 2, 3, 4)) {
		t.Fatalf("written %v", got)
	}
}

// Stop ends a drain stuck retrying, and the batch stays in the spool.
func TestDrainerStopDuringBackoff(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	appendOK(t, s, rec("p", 0))
	db := &fakeDB{failures: 1 << 30, keys: map[string]bool{}}
	d := NewDrainer(s, DrainerOptions{Write: db.write, MaxBackoff: time.Hour, FlushInterval: time.Hour})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		if d.Stats().Failed != 1 {
			return errors.New("not failing yet")
		}
		return nil
	})
	d.Stop()
	if s.Pending() != 1 {
		t.Fatalf("Pending = %d after Stop, want 1", s.Pending())
	}
}
