package httpapi_test

import (
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// Lease housekeeping (docs/api/operations.md §3, §5) wakes a parked pop when the lease that kept it
// waiting expires, so the redelivery does not wait for the pop's fallback poll. The fallback
// is set to 30 s here, so only the housekeeping signal can answer the pop in time.
func TestLeaseHousekeepingWakesParkedPop(t *testing.T) {
	if !testserver.Listens() {
		t.Skip("no LISTEN behind a transaction pooler without DATABASE_SESSION_URL: parked pops poll (TestPoolerLongPollAcrossInstances)")
	}
	b := stIsolated(t, testserver.Options{FakeClock: true, PollInitial: 30 * time.Second, PollMax: 30 * time.Second})
	b.configure(obj{"leaseTime": 10})
	b.admPushKeys("p", "a")
	b.admPop("p", "", 1) // a is leased until now + 10 s and never acked
	b.stRun(mq.JobLeaseHousekeeping)

	api := newCCAPI(t, b.srv.URL)
	lpWaitListening(t, b.srv, api)
	ch := lpParkedPop(t, b.srv, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=20000")

	b.srv.Clock.Advance(11 * time.Second)
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/none"); ok {
		t.Fatal("unexpected message") // a request in between must not wake the parked pop
	}
	b.stRun(mq.JobLeaseHousekeeping)
	p := lpRequireWoken(t, ch, time.Now(), "a")
	if p.Messages[0].RetryCount != 0 {
		t.Errorf("redelivery after expiry: retryCount %d, want 0", p.Messages[0].RetryCount)
	}
}
