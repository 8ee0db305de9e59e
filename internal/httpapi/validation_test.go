package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// valClient bounds every request of these tests, so that a route that hangs instead of
// answering fails the test rather than running into the binary's deadline.
var valClient = &http.Client{Timeout: 2 * time.Minute} // a bound, not a latency claim: CI machines run loaded

// valResp is one answer: status, headers and the whole body.
type valResp struct {
	code   int
	header http.Header
	body   []byte
}

// valSend sends one request, failing the test when there is no answer. body may be nil (no
// body), a string or []byte (sent verbatim), an io.Reader (streamed without a declared length)
// or anything else (sent as JSON).
func valSend(t testing.TB, method, url string, body any) valResp {
	t.Helper()
	r, err := valRoundTrip(method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// valRoundTrip is valSend for goroutines that must not call t.Fatal.
func valRoundTrip(method, url string, body any) (valResp, error) {
	resp, out, err := roundTrip(context.Background(), valClient, method, url, body, nil)
	if err != nil {
		return valResp{}, err
	}
	return valResp{code: resp.StatusCode, header: resp.Header, body: out}, nil
}

// valDo sends a request to the bundle's broker.
func (b *bundle) valDo(method, path string, body any) valResp {
	b.t.Helper()
	return valSend(b.t, method, b.srv.URL+path, body)
}

// valWantError requires status code and exactly the body {"error":msg} as JSON.
func valWantError(t testing.TB, r valResp, code int, msg string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q; body %s", ct, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if len(got) != 1 || got["error"] != msg {
		t.Fatalf("body %s, want {\"error\":%q}", r.body, msg)
	}
}

// valWantInvalidJSON requires 400 {"error":"Invalid JSON: <parser message>"}.
func valWantInvalidJSON(t testing.TB, r valResp) {
	t.Helper()
	if r.code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", r.code, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	msg, _ := got["error"].(string)
	detail, ok := strings.CutPrefix(msg, "Invalid JSON: ")
	if len(got) != 1 || !ok || strings.TrimSpace(detail) == "" {
		t.Fatalf("body %s, want {\"error\":\"Invalid JSON: <parser message>\"}", r.body)
	}
}

// valWantNoContent requires 204 with an empty body.
func valWantNoContent(t testing.TB, r valResp) {
	t.Helper()
	if r.code != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("status %d body %q, want 204 without body", r.code, r.body)
	}
}

// valKeys requires m to have exactly the given keys.
func valKeys(t testing.TB, m map[string]any, keys ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v (object %v)", got, want, m)
	}
}

// valName pads prefix with three-byte runes to exactly n characters, so that a byte count
// and a character count give different answers.
func valName(t testing.TB, prefix string, n int) string {
	t.Helper()
	pad := n - utf8.RuneCountInString(prefix)
	if pad < 0 {
		t.Fatalf("prefix %q is longer than %d characters", prefix, n)
	}
	return prefix + strings.Repeat("語", pad)
}

var (
	valUUIDRe   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	valUUIDv7Re = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	valMilliRe  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// valPopPath is the wildcard pop route of a queue, with the name escaped as a path segment.
func valPopPath(queue, query string) string {
	p := "/api/v1/pop/queue/" + url.PathEscape(queue)
	if query != "" {
		p += "?" + query
	}
	return p
}

// ---------------------------------------------------------------------------------------------
// POST /api/v1/configure

func TestValidationPushTooLarge(t *testing.T) {
	b := fakeSetup(t)
	// A valid push whose payload alone is over the limit, streamed without a length: were it
	// processed it would be a 201.
	head := `{"items":[{"queue":"` + b.queue + `","payload":"`
	tail := `"}]}`
	pad := int64(64<<20) + 1 - int64(len(head)+len(tail)) + 100
	body := io.MultiReader(strings.NewReader(head), io.LimitReader(valRepeatReader('a'), pad), strings.NewReader(tail))
	valWantError(t, b.valDo("POST", "/api/v1/push", body), http.StatusRequestEntityTooLarge, "Request body too large")
}

// valRepeatReader is an endless stream of one byte.
type valRepeatReader byte

func (r valRepeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// ---------------------------------------------------------------------------------------------
// small JSON helpers

// valEqualJSON compares two values after a JSON round trip, so map[string]any trees and
// structs compare by content.
func valEqualJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	na, _ := json.Marshal(va) // maps marshal with sorted keys
	nb, _ := json.Marshal(vb)
	return bytes.Equal(na, nb)
}

func valKeysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
