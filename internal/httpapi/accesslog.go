package httpapi

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"time"
)

// The access log (ACCESS_LOG, queen-go's own; docs/operations.md "Access log") writes one info
// line per request to the broker's logger, so it is text or JSON as LOG_FORMAT says:
//
//	level=INFO msg=request method=GET route=/api/v1/pop/queue/:queue status=200 durationMs=12.042 bytes=734
//
// It wraps the whole handler, outside the router, because an access log that leaves out some
// answers cannot be used to count or debug them: 404, 405 and OPTIONS answers, and requests
// refused for their Origin or Host, are logged too, with an empty route (the metrics and spans
// skip them; see telemetry). The route is the matched pattern, never the raw path: paths carry
// queue, partition and group names, which may be what an operator does not want in a log
// shipper, and the pattern is what the metrics are labelled with.

// accessKey is the context key of a request's accessRecord.
type accessKey struct{}

// accessRecord carries what routing found back to the access log, which runs before it.
type accessRecord struct {
	route string
}

// accessLog wraps h so every request it serves is logged once, when its answer is complete.
func accessLog(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &accessRecord{}
		aw := &accessWriter{ResponseWriter: w}
		defer func() {
			// The router answers a handler's panic with 500 itself; what reaches here is
			// http.ErrAbortHandler (the connection is cut), logged with the status sent, 0 when
			// none was, and passed on.
			v := recover()
			status := aw.code
			if status == 0 && v == nil {
				status = http.StatusOK // net/http's answer to a handler that wrote nothing
			}
			ms := math.Round(float64(time.Since(start))/float64(time.Microsecond)) / 1000
			log.LogAttrs(req.Context(), slog.LevelInfo, "request",
				slog.String("method", req.Method), slog.String("route", rec.route), slog.Int("status", status),
				slog.Float64("durationMs", ms), slog.Int64("bytes", aw.bytes))
			if v != nil {
				panic(v)
			}
		}()
		h.ServeHTTP(aw, req.WithContext(context.WithValue(req.Context(), accessKey{}, rec)))
	})
}

// noteRoute is the first middleware of the router's chain when the access log is on: it
// hands the matched route's pattern to the access log, before authentication can refuse the
// request, so a 401 is logged with its route too.
func noteRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if rec, _ := req.Context().Value(accessKey{}).(*accessRecord); rec != nil {
			rec.route = routePattern(req)
		}
		next.ServeHTTP(w, req)
	})
}

// accessWriter counts what the client is sent: the final status code and the body's bytes.
type accessWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

// WriteHeader records the first final status code (1xx answers are interim).
func (a *accessWriter) WriteHeader(code int) {
	if a.code == 0 && code >= 200 {
		a.code = code
	}
	a.ResponseWriter.WriteHeader(code)
}

// Write counts the body's bytes; the first write commits an implicit 200.
func (a *accessWriter) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	n, err := a.ResponseWriter.Write(b)
	a.bytes += int64(n)
	return n, err
}

// Flush passes a flush through, for answers that stream; it commits an implicit 200.
func (a *accessWriter) Flush() {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	_ = http.NewResponseController(a.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer (read deadlines, full duplex).
func (a *accessWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }
