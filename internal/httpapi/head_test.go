package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// TestHeadHealth: HEAD /health on a real server answers like GET, without a body.
func TestHeadHealth(t *testing.T) {
	b := setup(t, testserver.Options{})
	get, _, err := roundTrip(context.Background(), http.DefaultClient, "GET", b.srv.URL+"/health", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	head, body, err := roundTrip(context.Background(), http.DefaultClient, "HEAD", b.srv.URL+"/health", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.StatusCode != get.StatusCode || head.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD /health: %d %q; GET %d", head.StatusCode, body, get.StatusCode)
	}
	if head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
		t.Errorf("HEAD Content-Type %q, GET %q", head.Header.Get("Content-Type"), get.Header.Get("Content-Type"))
	}
}
