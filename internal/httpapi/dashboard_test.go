package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// TestDashboardServedByTheBroker: a real broker serves the dashboard at / (GET and HEAD, public
// even with authentication on) and keeps the JSON 404 for unknown assets and other paths
// (docs/api/dashboard.md §4.1).
func TestDashboardServedByTheBroker(t *testing.T) {
	b := setup(t, testserver.Options{JWTSecret: "dashboard-test-secret"})
	ctx := context.Background()
	for _, m := range []string{"GET", "HEAD"} {
		res, body, err := roundTrip(ctx, http.DefaultClient, m, b.srv.URL+"/", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s /: %d CSP %q", m, res.StatusCode, res.Header.Get("Content-Security-Policy"))
		}
		if m == "GET" && !strings.Contains(string(body), `<div id="app">`) {
			t.Errorf("GET /: %.200s", body)
		}
	}
	for _, p := range []string{"/assets/missing.js", "/index.html", "/dashboard"} {
		res, body, err := roundTrip(ctx, http.DefaultClient, "GET", b.srv.URL+p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 404 || strings.TrimSpace(string(body)) != `{"error":"Not found"}` {
			t.Errorf("GET %s: %d %s", p, res.StatusCode, body)
		}
	}
}
