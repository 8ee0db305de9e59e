package httpapi_test

// Shared pieces of the hostile-input fuzz targets (fuzz_body_test.go, fuzz_query_test.go):
// each target starts one real broker, reused by every input of the run, and fails on any 5xx,
// a panic (the router turns one into a 500) or a request the broker did not answer. Run one
// target at a time with one worker, since every worker process starts a broker of its own:
//
//	go test -run XXX -fuzz FuzzPushBody -fuzztime 60s -parallel 1 ./internal/httpapi/

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// fuzzClient bounds each request: no input may make the broker hang either.
var fuzzClient = &http.Client{Timeout: 2 * time.Minute}

// fuzzBroker starts the target's broker. A pop never waits long, so a fuzzed wait=true costs
// at most the default timeout.
func fuzzBroker(f *testing.F) *testserver.Server {
	f.Helper()
	return testserver.Start(f, testDSN, testserver.Options{DefaultTimeout: 50 * time.Millisecond})
}

// fuzzSend sends one request with a raw request target (path and query exactly as given,
// after fuzzEscape) and fails t on a 5xx or on no answer.
func fuzzSend(t *testing.T, srv *testserver.Server, method, target string, body []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	path, query, _ := strings.Cut(target, "?")
	req.URL.Opaque = path // sent verbatim: no re-escaping of the fuzzed segments
	req.URL.RawQuery = query
	resp, err := fuzzClient.Do(req)
	if err != nil {
		t.Fatalf("%s %q: %v", method, target, err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Fatalf("%s %q body %q: %d %s", method, target, body, resp.StatusCode, out)
	}
}

// fuzzEscape makes s safe inside a request target while keeping what the fuzzer means:
// printable ASCII stays (so "%FF", "%zz" and "+" reach the broker's decoding as written),
// every other byte, '#' and the characters of special (those that would end the part: '?'
// in a path, '/' in a segment, '&' in a value) are percent-encoded.
func fuzzEscape(s, special string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c < 0x7f && c != '#' && !strings.ContainsRune(special, rune(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
