package httpapi_test

// Lease expiry and extension (docs/api/concepts.md §7) are tested where the SQL decides them:
// internal/store/lease_test.go. What stays here is the wire of POST /api/v1/lease/{id}/extend:
// the answer's fields, expiresAt, and the texts of each outcome.

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

// extended is the element of an extend answer.
type extended struct {
	LeaseID   string  `json:"leaseId"`
	Success   bool    `json:"success"`
	Error     *string `json:"error"`
	ExpiresAt *string `json:"expiresAt"`
}

// semExtend extends lease by seconds, requiring 200 and a one-element answer.
func (b *bundle) semExtend(lease string, seconds int) extended {
	b.t.Helper()
	code, body := b.do("POST", "/api/v1/lease/"+lease+"/extend", obj{"seconds": seconds})
	if code != http.StatusOK {
		b.t.Fatalf("extend: %d %s", code, body)
	}
	res := decode[[]extended](b.t, body)
	if len(res) != 1 {
		b.t.Fatalf("extend answer %s", body)
	}
	return res[0]
}

// semExpiry requires a successful extension and returns its expiresAt.
func (b *bundle) semExpiry(e extended) time.Time {
	b.t.Helper()
	if !e.Success || e.ExpiresAt == nil || e.Error != nil {
		b.t.Fatalf("extend %+v (%s)", e, semStr(e.Error))
	}
	at, err := time.Parse(time.RFC3339Nano, *e.ExpiresAt)
	if err != nil {
		b.t.Fatal(err)
	}
	return at
}

// semNear requires got within a millisecond of want (expiresAt has millisecond precision).
func semNear(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("%s %v, want %v", what, got, want)
	}
}

// The extend answer: the lease id as sent, success and expiresAt when extended, the error text
// of an expired lease and of an unknown or malformed one.
func TestLeaseExtendAnswer(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"leaseTime": 10}})
	b.semPushKeys("pA", "a1")
	start := b.srv.Clock.Now()
	p := b.semMustPop(b.semQ(""), "a1")
	if e := b.semExtend(p.LeaseID, 30); e.LeaseID != p.LeaseID {
		t.Fatalf("extend answer %+v", e)
	} else {
		semNear(t, "extended expiry", b.semExpiry(e), start.Add(30*time.Second))
	}
	b.srv.Clock.Advance(31 * time.Second)
	e := b.semExtend(p.LeaseID, 60)
	if e.Success || semStr(e.Error) != "Lease already expired" || e.ExpiresAt != nil || e.LeaseID != p.LeaseID {
		t.Fatalf("extend expired %+v (%s)", e, semStr(e.Error))
	}
	for _, lease := range []string{uuid.NewString(), "not-a-uuid"} {
		e := b.semExtend(lease, 60)
		if e.Success || semStr(e.Error) != "Lease not found" || e.ExpiresAt != nil || e.LeaseID != lease {
			t.Fatalf("extend %s: %+v (%s)", lease, e, semStr(e.Error))
		}
	}
}
