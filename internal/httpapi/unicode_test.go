package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Payloads are any JSON text: escapes that jsonb cannot hold must round-trip too.
func TestPayloadWithNULEscapeAndLoneSurrogateRoundTrips(t *testing.T) {
	b := setup(t, testserver.Options{})
	body := `{"items":[{"queue":"` + b.queue + `","payload":{"s":"a\u0000b","t":"\ud800"}}]}`
	code, out := b.do("POST", "/api/v1/push", body)
	if code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, out)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue)
	if !ok || string(p.Messages[0].Data) != `{"s":"a\u0000b","t":"\ud800"}` {
		t.Fatalf("pop %+v", p)
	}
}

func TestNamesWithNULAreRefused(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, tc := range []struct{ body, want string }{
		{`{"items":[{"queue":"a\u0000b","payload":1}]}`, `{"error":"Queue must be a string"}`},
		{`{"items":[{"queue":"q","partition":"a\u0000b","payload":1}]}`, `{"error":"Partition must be a string"}`},
		{`{"items":[{"queue":"q","transactionId":"a\u0000b","payload":1}]}`, `{"error":"TransactionId must be a string"}`},
	} {
		code, out := b.do("POST", "/api/v1/push", tc.body)
		if code != http.StatusBadRequest || string(out) != tc.want {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, code, out, tc.want)
		}
	}
	for _, path := range []string{"/api/v1/pop/queue/a%00b", "/api/v1/pop/queue/" + b.queue + "/partition/a%00b",
		"/api/v1/pop/queue/" + b.queue + "?consumerGroup=a%00b", "/api/v1/pop?namespace=a%00b"} {
		if code, out := b.do("GET", path, nil); code != http.StatusNoContent {
			t.Errorf("%s: %d %s, want 204", path, code, out)
		}
	}
}
