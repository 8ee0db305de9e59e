package queen

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound matches a 404 answer: an unknown queue, partition or consumer group, or a
	// route the broker does not have (see ErrUnsupported).
	ErrNotFound = errors.New("queen: not found")
	// ErrUnsupported matches a 404 answer for an unknown route: the broker predates the
	// feature (for example DLQ browsing or consumer-group seek).
	ErrUnsupported = errors.New("queen: route not supported by this broker")
	// ErrUnauthorized matches a 401 answer: authentication is on and the token is missing or
	// invalid.
	ErrUnauthorized = errors.New("queen: unauthorized")
	// ErrForbidden matches a 403 answer: the token's role does not reach the route.
	ErrForbidden = errors.New("queen: forbidden")
	// ErrClosed is returned by buffers and clients used after Close.
	ErrClosed = errors.New("queen: closed")
	// ErrLeaseLost is the cause of a consumer handler's context cancellation when its lease
	// could not be renewed, and is matched by a transaction rolled back with QLEASE. The
	// message will be delivered again; the work in hand should be dropped.
	ErrLeaseLost = errors.New("queen: lease lost")
)

// HTTPError is a non-success answer from the broker, after retries where they apply.
type HTTPError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the "error" field of the answer, or its text when it has none.
	Message string
	// Method and URL name the request.
	Method, URL string
	// Body is the raw answer, for routes whose error bodies carry more than a message.
	Body []byte
}

// Error describes the request and the answer.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("queen: %s %s: %d %s", e.Method, e.URL, e.StatusCode, e.Message)
}

// Is matches the sentinel errors of this package by status code.
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrUnsupported:
		// "Not found" is the exact body of an unknown route (docs/api/README.md §2.1); a missing
		// resource says what is missing ("Queue not found").
		return e.StatusCode == http.StatusNotFound && e.Message == "Not found"
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	}
	return false
}

// Temporary reports whether the answer is one the client retries: a 5xx status.
func (e *HTTPError) Temporary() bool { return e.StatusCode >= 500 }
