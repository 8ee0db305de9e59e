package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
)

// setCORS adds the headers every response carries (docs/api/README.md §2.7). They are
// fixed values: the broker is meant to be called from any dashboard origin.
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
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
