package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// A seek back must make the re-delivered messages findable as soon as they are visible, even
// when the pair was already listed for work by a newer message (delayedProcessing gates the
// walk on the listed message's age).
func TestSeekBackUnderDelayedProcessingRedeliversOnceVisible(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"delayedProcessing": 10}})
	t0 := b.srv.Clock.Now()
	b.semPushKeys("p", "a1")
	b.srv.Clock.Advance(5 * time.Second)
	b.semPushKeys("p", "a2")
	b.srv.Clock.Advance(5 * time.Second) // a1 visible, a2 not yet
	b.semMustPop(b.semQ("consumerGroup=g&autoAck=true"), "a1")
	code, body := b.do("POST", "/api/v1/consumer-groups/g/queues/"+b.queue+"/seek",
		obj{"timestamp": t0.Add(-time.Second).UTC().Format(time.RFC3339Nano)})
	if code != http.StatusOK {
		t.Fatalf("seek: %d %s", code, body)
	}
	b.srv.Clock.Advance(2 * time.Second) // a1 visible again to g, a2 still not
	b.semMustPop(b.semQ("consumerGroup=g&autoAck=true"), "a1")
}
