package testkit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
)

// ConfigureRecorder is an HTTP server that answers POST /api/v1/configure and records the
// option keys of the last request, for tests that check a client sends every queue option.
// It is closed when the test ends.
func ConfigureRecorder(t testing.TB) (url string, keys func() []string) {
	t.Helper()
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Options map[string]any `json:"options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		sent = sent[:0]
		for k := range body.Options {
			sent = append(sent, k)
		}
		sort.Strings(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"configured":true,"queue":"q","options":{}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), sent...)
	}
}
