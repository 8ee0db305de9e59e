package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// benchSizes are the batch sizes every body benchmark runs at: a single item, where fixed
// per-request costs dominate, and a full default batch, where per-item costs do.
var benchSizes = []int{1, 100}

// benchPayload is a realistic message body of about 100 bytes; i keeps payloads distinct.
func benchPayload(i int) string {
	return fmt.Sprintf(`{"orderId":%d,"customer":"c-%06d","amount":99.95,"currency":"EUR","lines":[1,2,3],"note":"ok"}`, 100000+i, i)
}

// benchUUID is a well-formed UUID string unique to i.
func benchUUID(i int) string {
	return fmt.Sprintf("0198f3c2-7a10-7%03x-8%03x-%012x", i%0x1000, i%0x1000, i)
}

// discardWriter is an http.ResponseWriter that keeps nothing, so encoding benchmarks measure
// the encoder and not a recorder's buffer growth.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

func newDiscardWriter() *discardWriter { return &discardWriter{h: http.Header{}} }

// benchRequest is a reusable request whose body is rewound to the same bytes before each
// iteration, so decoding benchmarks include readJSON's read and validation as the handlers do.
type benchRequest struct {
	r    *http.Request
	rd   *bytes.Reader
	body []byte
}

func newBenchRequest(body []byte) *benchRequest {
	rd := bytes.NewReader(body)
	r := &http.Request{Method: http.MethodPost, Body: io.NopCloser(rd), ContentLength: int64(len(body)), Header: http.Header{}}
	return &benchRequest{r: r, rd: rd, body: body}
}

// rewind makes the whole body readable again.
func (br *benchRequest) rewind() *http.Request {
	br.rd.Reset(br.body)
	return br.r
}

// benchDecode runs readJSON plus parse on the body b.N times, the decoding half of a handler.
// parse returns the validation message, which must stay empty: a benchmark of the error path
// would measure nothing useful.
func benchDecode(b *testing.B, body []byte, parse func(json.RawMessage) string) {
	b.Helper()
	br := newBenchRequest(body)
	w := newDiscardWriter()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var raw json.RawMessage
		if !readJSON(w, br.rewind(), &raw) {
			b.Fatal("readJSON refused the body")
		}
		if msg := parse(raw); msg != "" {
			b.Fatal(msg)
		}
	}
}

// benchFast runs a one-pass batch reader over body b.N times.
func benchFast[T any](b *testing.B, body []byte, fast func([]byte) ([]T, bool)) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, ok := fast(body); !ok {
			b.Fatal("the one-pass reader refused the body")
		}
	}
}

// benchEncode runs writeJSON on the answer built by build b.N times.
func benchEncode(b *testing.B, build func() any) {
	b.Helper()
	w := newDiscardWriter()
	b.ReportAllocs()
	for b.Loop() {
		writeJSON(w, http.StatusOK, build())
	}
}
