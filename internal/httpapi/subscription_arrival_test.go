package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// A named group parked with subscriptionMode=new before its queue exists registers on the
// attempt that finds the queue; "new" still means after the pop arrived, so the message that
// created the queue (and woke the pop) is delivered, not skipped.
func TestSubscriptionNewParkedBeforeQueueExists(t *testing.T) {
	// The fallback poll is an hour away and the pop's own deadline a minute: an answer within
	// 10 s came from the push's wake-up, not from the attempt a pop makes at its deadline.
	b := setup(t, testserver.Options{PollInitial: time.Hour, PollMax: time.Hour})
	type answer struct {
		code int
		body []byte
	}
	got := make(chan answer, 1)
	go func() {
		code, body := doURL(t, "GET", b.srv.URL+"/api/v1/pop/queue/"+b.queue+
			"?consumerGroup=g&subscriptionMode=new&wait=true&timeout=60000", nil)
		got <- answer{code, body}
	}()
	lpWaitIdle(t, b.srv, 1) // its first attempt found no queue
	b.push("", obj{"payload": obj{"n": 1}, "transactionId": "first"})
	var a answer
	select {
	case a = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not woken by the push that created its queue")
	}
	if a.code != http.StatusOK {
		t.Fatalf("parked pop: %d %s", a.code, a.body)
	}
	if p := decode[popped](t, a.body); len(p.Messages) != 1 || p.Messages[0].TransactionID != "first" {
		t.Fatalf("parked pop got %s", a.body)
	}
}
