package auth

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// t0 is the fixed "now" of every verifier under test.
var t0 = time.Date(2026, 4, 26, 10, 0, 0, 0, time.UTC)

// clock is a settable time source shared by a verifier and its JWKS cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newVerifier builds a verifier whose clock the test controls.
func newVerifier(t *testing.T, c Config) (*Verifier, *clock) {
	t.Helper()
	v, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	clk := &clock{now: t0}
	v.now = clk.Now
	return v, clk
}

// sign returns a compact JWT; kid is put in the header when non-empty.
func sign(t *testing.T, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

// wantErr checks that err is the §6.3 answer with this status and message.
func wantErr(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want %d %q", err, err, status, msg)
	}
	if e.Status != status || e.Message != msg {
		t.Fatalf("got %d %q, want %d %q", e.Status, e.Message, status, msg)
	}
}

// verifyOK verifies token and fails the test on error.
func verifyOK(t *testing.T, v *Verifier, token string) Identity {
	t.Helper()
	id, err := v.Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return id
}

func verifyErr(t *testing.T, v *Verifier, token string, status int, msg string) {
	t.Helper()
	_, err := v.Verify(context.Background(), token)
	wantErr(t, err, status, msg)
}

const unauthorized = http.StatusUnauthorized
