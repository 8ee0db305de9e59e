package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxBodyBytes is the largest request body any route accepts (docs/api/README.md §2.4).
const MaxBodyBytes = 64 << 20

// maxDrainBytes is how much of an oversized body is read in total before the
// 413 goes out. A client that writes its whole body before reading the answer
// would otherwise see a connection reset instead of the 413.
const maxDrainBytes = 128 << 20

// initialBodyCap is the starting buffer when the body length is not declared;
// most requests are far smaller than the limit.
const initialBodyCap = 4 << 10

// readBody reads the whole request body, at most MaxBodyBytes of it. When it
// returns ok=false it has already answered (413, or 400 on a broken body) and
// the caller must just return.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if r.ContentLength > MaxBodyBytes {
		// Draining first and answering afterwards is allowed and keeps one code
		// path for declared and undeclared lengths.
		rejectTooLarge(w, r, 0)
		return nil, false
	}
	body, over, err := readLimited(r.Body, r.ContentLength)
	var mbe *http.MaxBytesError
	switch {
	case err == nil && !over && !utf8.Valid(body):
		// Checked before parsing (docs/api/README.md §2.4, §2.9): a body that is not UTF-8 is not JSON,
		// and its bytes would otherwise reach PostgreSQL inside a payload. An empty or
		// blank body is valid UTF-8, so "Empty request body" still comes first.
		writeError(w, http.StatusBadRequest, "Invalid JSON: invalid UTF-8")
		return nil, false
	case over:
		rejectTooLarge(w, r, MaxBodyBytes+1)
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

// readLimited reads r to EOF unless it holds more than MaxBodyBytes. The buffer
// grows by hand so that its capacity never exceeds the limit, whatever
// append's growth policy would do; declared is only a sizing hint.
func readLimited(r io.Reader, declared int64) (buf []byte, over bool, err error) {
	size := int64(initialBodyCap)
	if declared > 0 {
		size = declared
	}
	buf = make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			// Probe one byte before growing, so a body that exactly fills a
			// declared length ends without a doubling.
			var one [1]byte
			n, err := r.Read(one[:])
			if n > 0 {
				if len(buf) >= MaxBodyBytes {
					return nil, true, nil
				}
				buf = append(growBody(buf), one[0])
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

// growBody returns buf with room for at least one more byte, doubling up to
// MaxBodyBytes.
func growBody(buf []byte) []byte {
	c := min(max(2*cap(buf), initialBodyCap), MaxBodyBytes)
	nb := make([]byte, len(buf), c)
	copy(nb, buf)
	return nb
}

// rejectTooLarge discards what is left of the body, up to maxDrainBytes in
// total counting the consumed bytes already read, then answers 413.
func rejectTooLarge(w http.ResponseWriter, r *http.Request, consumed int64) {
	if rest := maxDrainBytes - consumed; rest > 0 {
		// A read error only means the client went away; the answer is the same.
		_, _ = io.CopyN(io.Discard, r.Body, rest)
	}
	writeError(w, http.StatusRequestEntityTooLarge, "Request body too large")
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
