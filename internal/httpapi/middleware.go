package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// The methods and request headers a page of an allowed origin may use (docs/api/README.md §2.7).
const (
	corsMethods = "GET, POST, PUT, DELETE, OPTIONS"
	corsHeaders = "Content-Type, Authorization"
)

// setCORS adds the headers of docs/api/README.md §2.7 for any origin: what every response
// carries when authentication is on or CORS_ALLOWED_ORIGINS is "*" (admission.go).
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
}

// recoverPanics runs h and turns a panic into a plain 500, so that a handler
// bug costs one request instead of dropping the connection, and the stack goes
// to the log rather than to the client (docs/api/README.md §2.5).
func recoverPanics(h http.Handler, w http.ResponseWriter, req *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			// The handler asked net/http to abort the connection; keep that meaning.
			panic(v)
		}
		slog.Error("handler panic", "method", req.Method, "path", req.URL.Path,
			"panic", v, "stack", string(debug.Stack()))
		if !sw.wroteHeader {
			writeError(w, http.StatusInternalServerError, "Internal server error")
		}
	}()
	h.ServeHTTP(sw, req)
}

// statusWriter remembers whether the response has started, which decides if a
// recovered panic can still be answered with a 500.
type statusWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

// WriteHeader records that the status line is committed.
func (s *statusWriter) WriteHeader(code int) {
	// 1xx answers are interim; the final status is still to come.
	if code >= 200 {
		s.wroteHeader = true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records that an implicit 200 is committed.
func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

// Flush keeps streaming handlers working through the wrapper.
func (s *statusWriter) Flush() {
	s.wroteHeader = true
	// A writer that cannot flush has nothing useful to report to the handler.
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// full duplex) through the wrapper.
func (s *statusWriter) Unwrap() http.ResponseWriter {
	return s.ResponseWriter
}

// bodyLimits applies the memory and time limits on request bodies (docs/api/README.md §2.4,
// docs/api/operations.md §9.2, §9.3) before any route runs, so that every route, the
// transaction route included, answers 408, 413 and 503 Server busy the same way and none
// processes a body it did not receive in full.
type bodyLimits struct {
	budget      *bodyBudget   // QUEEN_MAX_INFLIGHT_BODY_BYTES
	readTimeout time.Duration // HTTP_READ_TIMEOUT; 0: none
}

// startClock is the outermost handler: the body of a request must have arrived within
// readTimeout of the headers. http.Server.ReadTimeout is not used for this because its
// deadline would also end a parked long poll, whose connection net/http keeps reading to
// notice a client that leaves. A request without a body (every pop) gets no deadline at all;
// one with a body gets it cleared by load once the body is in. The deadline also bounds the
// drains before a 401, 403, 404 or 405 answer.
func (l *bodyLimits) startClock(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.readTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			// A writer without deadlines (a test recorder) simply runs without one.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(l.readTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// load is the innermost middleware, after authentication (a rejected client's body is
// drained, never held): it reads the whole body, counted against the in-flight budget, and
// hands it to the route as a loadedBody. The bytes stay counted until the route returns,
// since the route decodes from them.
func (l *bodyLimits) load(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		acct := &bodyAccount{budget: l.budget, ctx: r.Context()}
		defer acct.release()
		body, ok := loadBody(w, r, acct)
		if !ok {
			return
		}
		if l.readTimeout > 0 {
			// The body is in: from here the request may wait as long as its route says (a
			// long poll), and net/http's read watching for a departed client must not time
			// out. net/http clears the deadline itself when that read starts (Go 1.26); this
			// does not rest on that detail.
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		r.Body = &loadedBody{data: body}
		next.ServeHTTP(w, r)
	})
}
