//go:build otlp

package app_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/queen-go/queen/internal/app"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the App exports its spans over OTLP/HTTP: a fake
// collector receives, by Stop at the latest, protobuf batches holding the trace a client's
// traceparent named, and after Stop no goroutine of the exporter is left.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	before := goroutines()
	ctx := context.Background()
	cfg := productionConfig(t, testDSN, freshSchema("app_otlp"))
	cfg.PprofAddr = ""
	cfg.OTLPEndpoint = collector.URL + "/"
	a, err := app.New(ctx, cfg, app.WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest("POST", a.URL()+"/api/v1/push",
		strings.NewReader(`{"items":[{"queue":"otlp","payload":1}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.Stop()
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(resp.Header.Get("Traceparent"), traceID) {
		t.Errorf("push: %d, traceparent %q", resp.StatusCode, resp.Header.Get("Traceparent"))
	}
	a.Stop() // exports what the batcher still holds

	raw, _ := hex.DecodeString(traceID)
	mu.Lock()
	var found bool
	for _, b := range bodies {
		found = found || bytes.Contains(b, raw) && bytes.Contains(b, []byte("queen.push")) && bytes.Contains(b, []byte("queen.db.push"))
	}
	n := len(bodies)
	mu.Unlock()
	if !found {
		t.Errorf("%d export requests, none holds trace %s with queen.push and queen.db.push", n, traceID)
	}
	collector.Close()
	checkNoNewGoroutines(t, before)
}
