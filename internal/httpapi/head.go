package httpapi

import "net/http"

// headOnly answers HEAD with the GET handler h: the same status and headers, no body.
// net/http's server drops a HEAD body by itself, but not every http.ResponseWriter does
// (httptest.ResponseRecorder, wrapping middleware), so the body is discarded here.
func headOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		h(bodyless{w}, req)
	}
}

// bodyless is a ResponseWriter that keeps the status and headers and drops the body.
type bodyless struct{ http.ResponseWriter }

// Write reports the body written, as a HEAD answer has none to send.
func (b bodyless) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap gives http.ResponseController the underlying writer.
func (b bodyless) Unwrap() http.ResponseWriter { return b.ResponseWriter }
