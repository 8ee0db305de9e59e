package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxBodyBytes is the largest request body any route accepts (docs/api/README.md §2.4).
const MaxBodyBytes = 64 << 20

// maxDrainBytes is how much of an oversized body is read in total before the
// 413 goes out. A client that writes its whole body before reading the answer
// would otherwise see a connection reset instead of the 413.
const maxDrainBytes = 128 << 20

// initialBodyCap is the first buffer a body is read into (or the declared length, when
// smaller). The buffer then doubles as the bytes arrive, so a client that declares 64 MiB and
// sends ten bytes costs the broker this much, not 64 MiB (docs/api/operations.md §9.2).
const initialBodyCap = 4 << 10

// freeBodyBytes is the largest buffer never counted against the in-flight body budget: pops,
// acks and small pushes must not be refused for memory (docs/api/operations.md §9.2).
const freeBodyBytes = 64 << 10

// busyWait is how long a body waits for room in the in-flight budget before its request gets
// 503 Server busy (docs/api/README.md §2.4).
const busyWait = time.Second

// errBodyBusy ends a body read whose next bytes found no room in the in-flight budget.
var errBodyBusy = errors.New("in-flight body budget spent")

// loadedBody is a request body already read into memory by the body limits, before the route
// ran. readBody hands its bytes over as they are: reading a body twice would cost a copy.
type loadedBody struct {
	data []byte
	off  int
}

// Read serves the loaded bytes to code that reads r.Body itself.
func (b *loadedBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

// Close does nothing: the connection's body was read to its end already.
func (b *loadedBody) Close() error { return nil }

// readBody returns the whole request body, at most MaxBodyBytes of it. Behind the body limits
// (every route New registers) the body was loaded before the route ran and is handed over as
// is; otherwise (a handler called on its own, in tests) it is read here, without the in-flight
// budget. When it returns ok=false it has already answered and the caller must just return.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if lb, ok := r.Body.(*loadedBody); ok && lb.off == 0 {
		return lb.data, true
	}
	return loadBody(w, r, nil)
}

// loadBody reads the body under the limits of docs/api/README.md §2.4: 64 MiB (413), the
// in-flight budget through acct (503; nil: not counted) and the connection's read deadline
// (408). On ok=false it has answered. The bytes acct holds stay held until acct.release.
func loadBody(w http.ResponseWriter, r *http.Request, acct *bodyAccount) (body []byte, ok bool) {
	if r.ContentLength > MaxBodyBytes {
		// Draining first and answering afterwards is allowed and keeps one code
		// path for declared and undeclared lengths.
		rejectTooLarge(w, r, 0)
		return nil, false
	}
	var reserve func(int) bool
	if acct != nil {
		reserve = acct.grow
	}
	body, over, err := readLimited(r.Body, r.ContentLength, reserve)
	var mbe *http.MaxBytesError
	switch {
	case err == nil && !over && !utf8.Valid(body):
		// Checked before parsing (docs/api/README.md §2.4, §2.9): a body that is not UTF-8 is not JSON,
		// and its bytes would otherwise reach PostgreSQL inside a payload. An empty or
		// blank body is valid UTF-8, so "Empty request body" still comes first.
		writeError(w, http.StatusBadRequest, "Invalid JSON: invalid UTF-8")
		return nil, false
	case over:
		acct.release()
		rejectTooLarge(w, r, MaxBodyBytes+1)
		return nil, false
	case errors.Is(err, errBodyBusy):
		consumed := int64(len(body))
		body = nil
		acct.release()
		rejectBusy(w, r, consumed)
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		// HTTP_READ_TIMEOUT passed: the rest of the body may never come, so the connection
		// cannot be reused; the answer goes out if the client still reads.
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, "Request body timeout")
		return nil, false
	case errors.As(err, &mbe):
		// An outer http.MaxBytesReader gave up before our own limit did.
		writeError(w, http.StatusRequestEntityTooLarge, "Request body too large")
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "Failed to read request body")
		return nil, false
	}
	return body, true
}

// readLimited reads r to EOF unless it holds more than MaxBodyBytes. The buffer starts small
// and doubles only when the bytes already arrived fill it, never past the declared length
// (when there is one) nor past the limit: a declared length is only a ceiling, never a size
// to allocate up front, so a stalled upload holds only about what it sent. reserve (when not
// nil) is asked before each growth for the new capacity; false stops the read with
// errBodyBusy, returning what was read so far.
func readLimited(r io.Reader, declared int64, reserve func(newCap int) bool) (buf []byte, over bool, err error) {
	size := initialBodyCap
	if declared > 0 && declared < int64(size) {
		size = int(declared)
	}
	buf = make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			// Probe one byte before growing, so a body that exactly fills its declared
			// length (or the limit) ends without a growth.
			var one [1]byte
			n, err := r.Read(one[:])
			if n > 0 {
				if len(buf) >= MaxBodyBytes {
					return nil, true, nil
				}
				c := growCap(len(buf), declared)
				if reserve != nil && !reserve(c) {
					return buf, false, errBodyBusy
				}
				nb := make([]byte, len(buf), c)
				copy(nb, buf)
				buf = append(nb, one[0])
			}
			if err == io.EOF {
				return buf, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			continue
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}

// growCap is the next capacity of a full body buffer of n bytes: double, but no more than
// the declared length while the body is within it, and never over MaxBodyBytes.
func growCap(n int, declared int64) int {
	c := max(2*n, initialBodyCap)
	if declared > int64(n) {
		c = int(min(int64(c), declared))
	}
	return min(c, MaxBodyBytes)
}

// bodyAccount is one request's share of the in-flight budget: the capacity of its body
// buffer, counted once it grows past freeBodyBytes (then from its first byte). A nil account
// counts nothing.
type bodyAccount struct {
	budget *bodyBudget
	ctx    context.Context
	held   int64
}

// grow reserves room for a buffer of newCap bytes, waiting up to busyWait for it.
func (a *bodyAccount) grow(newCap int) bool {
	if a == nil || newCap <= freeBodyBytes || int64(newCap) <= a.held {
		return true
	}
	need := int64(newCap) - a.held
	if !a.budget.acquire(a.ctx, need, busyWait) {
		return false
	}
	a.held += need
	return true
}

// release gives back everything the account holds; the body must no longer be used.
func (a *bodyAccount) release() {
	if a == nil {
		return
	}
	a.budget.release(a.held)
	a.held = 0
}

// rejectTooLarge discards what is left of the body, up to maxDrainBytes in
// total counting the consumed bytes already read, then answers 413.
func rejectTooLarge(w http.ResponseWriter, r *http.Request, consumed int64) {
	drain(r, consumed)
	writeError(w, http.StatusRequestEntityTooLarge, "Request body too large")
}

// rejectBusy discards what is left of the body as for a 413, then answers 503 Server busy:
// the client may retry in a second, when other bodies have gone (docs/api/README.md §2.4).
func rejectBusy(w http.ResponseWriter, r *http.Request, consumed int64) {
	drain(r, consumed)
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "Server busy")
}

// drain reads and drops the rest of the body, up to maxDrainBytes in total counting the
// consumed bytes already read, so that a client that writes its whole body before reading
// still receives the answer instead of a reset connection.
func drain(r *http.Request, consumed int64) {
	if rest := maxDrainBytes - consumed; rest > 0 {
		// A read error only means the client went away (or the read deadline passed); the
		// answer is the same.
		_, _ = io.CopyN(io.Discard, r.Body, rest)
	}
}

// readJSON reads the body and decodes it into v with json.Unmarshal, answering
// the common body errors of docs/api/README.md §2.4 itself. A body whose JSON is valid but
// does not fit v's Go type also gets the "Invalid JSON" answer; callers that
// need their own validation messages decode into json.RawMessage or
// map[string]json.RawMessage and inspect the fields themselves.
func readJSON(w http.ResponseWriter, r *http.Request, v any) (ok bool) {
	body, ok := readBody(w, r)
	return ok && decodeJSON(w, body, v)
}

// decodeJSON is readJSON for a body already read.
func decodeJSON(w http.ResponseWriter, body []byte, v any) (ok bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "Empty request body")
		return false
	}
	if raw, ok := v.(*json.RawMessage); ok && json.Valid(body) {
		// What Unmarshal would store, the value without the whitespace around it, minus
		// its second pass over the body and its copy: the body buffer is ours alone.
		*raw = bytes.Trim(body, " \t\r\n")
		return true
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON: "+err.Error())
		return false
	}
	return true
}

// writeJSON answers status with v as JSON. The value is encoded before
// anything is sent so that an encoding failure can still become a clean 500.
// HTML escaping is off because message payloads must come back byte-for-byte
// as the producer wrote them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	if !bodyAllowed(status) {
		h.Del("Content-Type")
		w.WriteHeader(status)
		return
	}
	buf := encodeBufs.Get().(*bytes.Buffer)
	defer putEncodeBuf(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.Error("encoding JSON response", "error", err)
		buf.Reset()
		buf.WriteString(`{"error":"Internal server error"}`)
		status = http.StatusInternalServerError
	}
	writeBody(w, status, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// writeBody answers status with the JSON text out.
func writeBody(w http.ResponseWriter, status int, out []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	// A failed write means the client is gone; there is nobody left to tell.
	_, _ = w.Write(out)
}

// encodeBufs recycles writeJSON's buffers: a fresh buffer per answer was most of the
// memory the answer path allocated (a pop of 100 messages is tens of kilobytes).
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest buffer kept for reuse, so that one huge answer does not stay
// resident for the life of the process.
const maxPooledBuf = 1 << 20

// putEncodeBuf returns buf to encodeBufs once the answer is written; the ResponseWriter does
// not keep the slice it was given (io.Writer's contract).
func putEncodeBuf(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBuf {
		return
	}
	buf.Reset()
	encodeBufs.Put(buf)
}

// writeError answers status with the API reference's error body {"error":msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// bodyAllowed reports whether HTTP lets a response with this status carry a
// body; net/http refuses writes for the others.
func bodyAllowed(status int) bool {
	switch {
	case status >= 100 && status < 200:
		return false
	case status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
}
