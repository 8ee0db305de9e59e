// Package testkit holds the helpers every test package of queen-go shares. It has no
// dependency on the broker's packages, so any of them can use it.
package testkit

import (
	"testing"
	"time"
)

// Eventually polls fn every interval until it returns nil, and fails the test with fn's last
// error once total has passed. Tests wait for a state with it instead of sleeping a guess
// (NATS's checkFor): it returns as soon as the state holds, and a state that never comes
// fails with the reason instead of a flaky assertion.
func Eventually(t testing.TB, total, interval time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %s: %v", total, err)
		}
		time.Sleep(interval)
	}
}
