package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext reads and writes the W3C traceparent and tracestate headers. It is fixed
// rather than otel's global propagator: W3C Trace Context is the one format the API promises
// (README "Observability"), and a fixed value keeps the wire layer free of global state.
var traceContext propagation.TraceContext

// telemetry is the outermost middleware of every routed request: it times the request for
// queen_http_request_duration_seconds and, when a tracer is configured, runs it in a server
// span that continues the caller's traceparent and answers with the span's own traceparent.
// It runs after routing, so the route's pattern (never the raw path, which would make a series
// and a span name per queue) labels both; 404, 405 and OPTIONS answers are not routed and not
// measured.
func (s *Server) telemetry(next http.Handler) http.Handler {
	tracer := s.cfg.Tracer
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		route := routePattern(req)
		sw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		var span trace.Span
		if tracer != nil {
			ctx := traceContext.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span = tracer.Start(ctx, req.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", req.Method),
					attribute.String("http.route", route), attribute.String("url.path", req.URL.Path)))
			// Before the handler writes: headers sent after the status line are lost.
			traceContext.Inject(ctx, propagation.HeaderCarrier(w.Header()))
			req = req.WithContext(ctx)
		}
		defer func() {
			// Deferred so a panicking handler is still measured (the router answers it 500).
			code := sw.code
			if v := recover(); v != nil {
				code = http.StatusInternalServerError
				defer panic(v)
			}
			s.cfg.Metrics.ObserveRequest(req.Method, route, code, time.Since(start))
			if s.cfg.Overloaded != nil && s.cfg.Overloaded(req.Context()) {
				s.cfg.Metrics.Overload(route)
			}
			if span != nil {
				span.SetAttributes(attribute.Int("http.response.status_code", code))
				if code >= 500 {
					span.SetStatus(codes.Error, strconv.Itoa(code))
				}
				span.End()
			}
		}()
		next.ServeHTTP(sw, req)
	})
}

// routePattern is the pattern of the route the router matched for req, "" outside one.
func routePattern(req *http.Request) string {
	if m, _ := req.Context().Value(matchKey{}).(*routeMatch); m != nil {
		return m.route.pattern
	}
	return ""
}

// codeWriter remembers the status code a handler answered with.
type codeWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

// WriteHeader records the first final status code.
func (c *codeWriter) WriteHeader(code int) {
	if !c.wroteHeader && code >= 200 {
		c.code, c.wroteHeader = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

// Flush passes a flush through, for answers that stream.
func (c *codeWriter) Flush() {
	c.wroteHeader = true
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
