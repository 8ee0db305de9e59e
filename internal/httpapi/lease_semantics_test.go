package httpapi_test

// Lease expiry and extension (concepts.md §7).

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

func TestLeaseExpiryRedeliversWithoutCounting(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"leaseTime": 10, "retryLimit": 1, "retryDelay": 0}})
	b.semPushKeys("Default", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=2&consumerGroup=g"), "a1", "a2")
	b.semMustAck(semAckOf(p, 0, "completed"))
	b.srv.Clock.Advance(9 * time.Second)
	b.semNoPop(b.semQ("batch=10&consumerGroup=g"))
	// Expiry makes the pair deliverable again from cursor+1, in order, far more often than
	// retryLimit: it never counts as a failure and never dead-letters.
	for i := range 4 {
		b.srv.Clock.Advance(11 * time.Second)
		q := b.semMustPop(b.semQ("batch=10&consumerGroup=g"), "a2", "a3")
		if q.LeaseID == p.LeaseID || q.Messages[0].RetryCount != 0 {
			t.Fatalf("redelivery %d: %+v", i, q)
		}
		p = q
	}
	// A counted failure survives later expiries unchanged.
	b.semMustAck(semAckOf(p, 0, "failed"))
	for range 2 {
		p = b.semMustPop(b.semQ("batch=10&consumerGroup=g"), "a2", "a3")
		if p.Messages[0].RetryCount != 1 {
			t.Fatalf("retryCount after expiry %d, want 1", p.Messages[0].RetryCount)
		}
		b.srv.Clock.Advance(11 * time.Second)
	}
	if got := semDLQ(t, b.queue); len(got) != 0 {
		t.Fatalf("lease expiry dead-lettered %+v", got)
	}
	if st := semState(t, b.queue, "Default", "g"); st.Cursor != 1 || st.RetryCount != 1 {
		t.Fatalf("state %+v", st)
	}
}

func TestLeaseTimeZeroMeansSixtySeconds(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"leaseTime": 0}})
	b.semPushKeys("Default", "a1")
	start := b.srv.Clock.Now()
	b.semMustPop(b.semQ(""), "a1")
	st := semState(t, b.queue, "Default", "__QUEUE_MODE__")
	if st.LeaseExpiresAt == nil {
		t.Fatal("no lease")
	}
	semNear(t, "lease expiry", *st.LeaseExpiresAt, start.Add(time.Minute))
	b.srv.Clock.Advance(59 * time.Second)
	b.semNoPop(b.semQ(""))
	b.srv.Clock.Advance(2 * time.Second)
	b.semMustPop(b.semQ(""), "a1")
}

func TestLeaseExtend(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"leaseTime": 10}})
	b.semPushKeys("pA", "a1")
	b.srv.Clock.Advance(time.Second)
	b.semPushKeys("pB", "b1")
	start := b.srv.Clock.Now()
	p := b.semMustPop(b.semQ("partitions=2&batch=10"), "a1", "b1")

	// Never shortens.
	semNear(t, "unchanged expiry", b.semExpiry(b.semExtend(p.LeaseID, 5)), start.Add(10*time.Second))
	b.srv.Clock.Advance(8 * time.Second)
	semNear(t, "extended expiry", b.semExpiry(b.semExtend(p.LeaseID, 30)), start.Add(38*time.Second))
	for _, part := range []string{"pA", "pB"} { // every pair holding the lease
		if st := semState(t, b.queue, part, "__QUEUE_MODE__"); st.LeaseExpiresAt == nil {
			t.Fatalf("%s lost its lease", part)
		} else {
			semNear(t, part+" expiry", *st.LeaseExpiresAt, start.Add(38*time.Second))
		}
	}
	b.srv.Clock.Advance(20 * time.Second) // 28 s after the pop: alive only through the extension
	b.semNoPop(b.semQ("partitions=2&batch=10"))
	b.semMustAck(semAckOf(p, 0, "completed")) // releases pA only

	// Cannot revive an expired lease.
	b.srv.Clock.Advance(11 * time.Second)
	e := b.semExtend(p.LeaseID, 60)
	if e.Success || semStr(e.Error) != "Lease already expired" || e.ExpiresAt != nil {
		t.Fatalf("extend expired %+v (%s)", e, semStr(e.Error))
	}
	q := b.semMustPop(b.semQ("batch=10"), "b1")
	// Replaced, released and unknown leases are not found.
	for _, lease := range []string{p.LeaseID, uuid.NewString(), "not-a-uuid"} {
		e := b.semExtend(lease, 60)
		if e.Success || semStr(e.Error) != "Lease not found" || e.ExpiresAt != nil || e.LeaseID != lease {
			t.Fatalf("extend %s: %+v (%s)", lease, e, semStr(e.Error))
		}
	}
	b.semMustAck(semAckOf(q, 0, "completed"))
	if e := b.semExtend(q.LeaseID, 60); semStr(e.Error) != "Lease not found" {
		t.Fatalf("extend released lease %+v (%s)", e, semStr(e.Error))
	}
}

func TestLeaseExtendKeepsPartiallyExpiredLease(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	// One pop, two queues of one namespace with different lease times.
	ns := b.queue
	b.semConfigure(ns+".short", obj{"options": obj{"leaseTime": 10}})
	b.semConfigure(ns+".long", obj{"options": obj{"leaseTime": 100}})
	for _, q := range []string{ns + ".short", ns + ".long"} {
		b.push("", obj{"queue": q, "payload": 1, "transactionId": q})
	}
	start := b.srv.Clock.Now()
	p, ok := b.pop("/api/v1/pop?namespace=" + ns + "&partitions=2&batch=10")
	if !ok || p.PartitionsClaimed != 2 {
		t.Fatalf("namespace pop %+v", p)
	}
	b.srv.Clock.Advance(20 * time.Second)
	// The short pair expired; the long one is live and is the only one extended.
	semNear(t, "expiry", b.semExpiry(b.semExtend(p.LeaseID, 200)), start.Add(220*time.Second))
	st := semState(t, ns+".short", "Default", "__QUEUE_MODE__")
	if st.LeaseExpiresAt == nil || !st.LeaseExpiresAt.Before(b.srv.Clock.Now()) {
		t.Fatalf("expired pair revived: %+v", st)
	}
}
