package spool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var errSlow = errors.New("passed its deadline on a busy database")

// A batch that is only too slow (Slow) is retried at once in halves down to one record, which
// goes to WriteSlow; no back-off, nothing skipped or reordered, and the batch size grows back
// after the slow record is written.
func TestDrainerHalvesASlowBatchDownToOneRecord(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	var want []string
	for i := range 12 {
		r := rec("p", i)
		appendOK(t, s, r)
		want = append(want, r.MessageID)
	}
	var mu sync.Mutex
	var tried, slowTried []int
	var rows []string
	write := func(slow bool) WriteFunc {
		return func(_ context.Context, recs []Record) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			if slow {
				slowTried = append(slowTried, len(recs))
			} else {
				tried = append(tried, len(recs))
				if recs[0].MessageID == "p-0" { // p-0 is too slow for a request's deadline
					return 0, fmt.Errorf("replay: %w", errSlow)
				}
			}
			for _, r := range recs {
				rows = append(rows, r.MessageID)
			}
			return 0, nil
		}
	}
	slept := 0
	d := NewDrainer(s, DrainerOptions{
		Write: write(false), WriteSlow: write(true), MaxBatch: 8,
		Slow:  func(err error) bool { return errors.Is(err, errSlow) },
		Sleep: func(context.Context, time.Duration) bool { slept++; return true },
	})
	drainAll(t, d, s)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(rows, want) {
		t.Errorf("written %v, want %v", rows, want)
	}
	if !slices.Equal(tried, []int{8, 4, 2, 1, 2, 4, 5}) || !slices.Equal(slowTried, []int{1}) {
		t.Errorf("batches tried %v and under the long deadline %v, want [8 4 2 1 2 4 5] and [1]", tried, slowTried)
	}
	if slept != 0 {
		t.Errorf("slept %d times for a slow batch, want none", slept)
	}
}

// Holds names the partitions whose spooled records wait: only those, while they wait; the
// records of an earlier run hold every partition until they are replayed.
func TestHoldsOnlyThePartitionsThatWait(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	if s.Holds("q", "a") {
		t.Fatal("an empty spool holds a partition")
	}
	appendOK(t, s, rec("a", 0), rec("a", 1), rec("b", 0))
	if !s.Holds("q", "a") || !s.Holds("q", "b") || s.Holds("q", "c") || s.Holds("other", "a") {
		t.Fatalf("holds a %v, b %v, c %v, other/a %v; want a and b only",
			s.Holds("q", "a"), s.Holds("q", "b"), s.Holds("q", "c"), s.Holds("other", "a"))
	}
	b, err := s.Next(2) // a-0, a-1
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if s.Holds("q", "a") || !s.Holds("q", "b") {
		t.Errorf("after a's records were replayed: holds a %v, b %v; want b only", s.Holds("q", "a"), s.Holds("q", "b"))
	}
	s.Close()

	// Reopened, the waiting record's partition is not known: every partition is held.
	s2 := openSpool(t, dir, Options{})
	if !s2.Holds("q", "c") {
		t.Error("a record of an earlier run does not hold every partition")
	}
	appendOK(t, s2, rec("d", 0))
	b, err = s2.Next(1) // b-0, the earlier run's
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(b); err != nil {
		t.Fatal(err)
	}
	if s2.Holds("q", "c") || !s2.Holds("q", "d") {
		t.Errorf("after the earlier run's record: holds c %v, d %v; want d only", s2.Holds("q", "c"), s2.Holds("q", "d"))
	}
}

// A spool is claimed by the first database that asks; one holding pending records of another
// database refuses it with a message naming both and the count, and stays as it was. Once
// nothing is pending, any database may claim it.
func TestClaimRefusesAnotherDatabasesRecords(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	mine, theirs := Owner{System: "1", Database: "mine", Schema: "s"}, Owner{System: "2", Database: "theirs", Schema: "s"}
	appendOK(t, s, rec("a", 0))
	if err := s.Claim(mine); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := s.Claim(mine); err != nil {
		t.Fatalf("claim by the owner: %v", err)
	}
	s.Close()
	s = openSpool(t, dir, Options{})
	err := s.Claim(theirs)
	var oe *OwnerError
	if !errors.As(err, &oe) || oe.Pending != 1 || oe.Recorded != mine {
		t.Fatalf("claim by another database: %v", err)
	}
	for _, want := range []string{dir, "1 pushes", `"mine"`, `"theirs"`, "FILE_BUFFER_DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %s", err, want)
		}
	}
	if err := s.Claim(mine); err != nil {
		t.Errorf("the owner after a refused claim: %v", err)
	}
	b, err := s.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(theirs); err != nil {
		t.Errorf("claim of an empty spool: %v", err)
	}
}
