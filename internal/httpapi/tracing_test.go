package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/testserver"
)

// TestTraceparent: a client that sends a W3C traceparent with a push and with a pop finds both
// operations in its trace, each under a server span whose parent is the client's span and
// with a database child span; every answer carries the server span's traceparent.
func TestTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b := stIsolated(t, testserver.Options{TracerProvider: tp})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const pushParent, popParent = "00f067aa0ba902b7", "00f067aa0ba902b8"
	call := func(method, path, parent string, body any) {
		h := http.Header{"Traceparent": {"00-" + traceID + "-" + parent + "-01"}}
		resp, out, err := roundTrip(context.Background(), http.DefaultClient, method, b.srv.URL+path, body, h)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %v %v %s", method, path, err, resp, out)
		}
		tp := resp.Header.Get("Traceparent")
		if !strings.HasPrefix(tp, "00-"+traceID+"-") || strings.Contains(tp, parent) {
			t.Errorf("%s %s answered traceparent %q, want trace %s and the server's own span", method, path, tp, traceID)
		}
	}
	call("POST", "/api/v1/push", pushParent, obj{"items": []obj{{"queue": b.queue, "payload": 1}}})
	call("GET", "/api/v1/pop/queue/"+url.PathEscape(b.queue), popParent, nil)

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	find := func(name string) sdktrace.ReadOnlySpan {
		for _, s := range rec.Ended() {
			if s.Name() == name {
				return s
			}
		}
		t.Fatalf("no span %q among %d", name, len(rec.Ended()))
		return nil
	}
	for _, c := range []struct{ server, op, db, parent string }{
		{"POST /api/v1/push", "queen.push", "queen.db.push", pushParent},
		{"GET /api/v1/pop/queue/:queue", "queen.pop", "queen.db.pop", popParent},
	} {
		server, op, db := find(c.server), find(c.op), find(c.db)
		if got := server.SpanContext().TraceID().String(); got != traceID {
			t.Errorf("%s: trace %s, want the client's %s", c.server, got, traceID)
		}
		if got := server.Parent().SpanID().String(); got != c.parent || !server.Parent().IsRemote() {
			t.Errorf("%s: parent %s, want the client's span %s", c.server, got, c.parent)
		}
		if server.SpanKind() != trace.SpanKindServer {
			t.Errorf("%s: kind %v", c.server, server.SpanKind())
		}
		if op.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", c.op, c.server)
		}
		if db.Parent().SpanID() != op.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", c.db, c.op)
		}
		if db.EndTime().Sub(db.StartTime()) <= 0 {
			t.Errorf("%s has no duration", c.db)
		}
	}
}
