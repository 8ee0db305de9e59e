package testkit

import (
	"errors"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	n := 0
	Eventually(t, time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	f := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		Eventually(f, 20*time.Millisecond, time.Millisecond, func() error { return errors.New("never") })
	}()
	if f.failed == "" {
		t.Fatal("Eventually did not fail")
	}
}
