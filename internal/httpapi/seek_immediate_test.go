package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// A seek is visible to the very next pop: no parking, no fallback poll needed.
func TestSeekBackIsVisibleToTheNextPop(t *testing.T) {
	b := setup(t, testserver.Options{})
	for round := 0; round < 10; round++ {
		queue := fmt.Sprintf("%s-%d", b.queue, round)
		for i := 0; i < 3; i++ {
			b.push("p"+fmt.Sprint(i), obj{"queue": queue, "payload": i})
		}
		for n := 0; n < 3; {
			p, ok := b.pop("/api/v1/pop/queue/" + queue + "?consumerGroup=g&autoAck=true&batch=10")
			if !ok {
				t.Fatalf("round %d: drained only %d", round, n)
			}
			n += len(p.Messages)
		}
		from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		code, body := b.do("POST", "/api/v1/consumer-groups/g/queues/"+queue+"/seek", obj{"timestamp": from})
		if code != http.StatusOK {
			t.Fatalf("seek: %d %s", code, body)
		}
		got := 0
		for got < 3 {
			p, ok := b.pop("/api/v1/pop/queue/" + queue + "?consumerGroup=g&autoAck=true&batch=10")
			if !ok {
				t.Fatalf("round %d: after the seek the next pop got %d of 3 messages", round, got)
			}
			got += len(p.Messages)
		}
	}
}
