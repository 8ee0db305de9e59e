package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/testserver"
)

// Connection limits of docs/api/operations.md §9.3, against a real broker: idle keep-alive
// connections are closed, slow bodies get 408, oversized headers 431, and a parked long poll
// outlives every one of these timeouts.

// startTuned starts a broker as testserver.Start does, with tune applied to its configuration
// first (short timeouts, a small body budget), and returns its listen address.
func startTuned(t *testing.T, tune func(*config.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cfg := testserver.Config(testDSN, testserver.Options{})
	cfg.DBPoolSize = 4 // these brokers do little database work; others share the PostgreSQL
	cfg.FileBufferDir = t.TempDir()
	tune(&cfg)
	a, err := app.New(context.Background(), cfg, app.WithVersion("test"), app.WithListener(ln),
		app.WithoutMigration(), app.WithoutMetricsLoop())
	if err != nil {
		ln.Close()
		t.Fatalf("build broker: %v", err)
	}
	if err := a.Start(context.Background()); err != nil {
		a.Stop()
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(a.Stop)
	return a.Addr().String()
}

// dialRaw opens a TCP connection to addr that the test drives byte by byte; every read and
// write fails after a generous bound rather than hanging the suite.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// readAnswer reads one HTTP response from br and its whole body.
func readAnswer(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, string(b)
}

// wantClosed waits, up to a generous bound, for the broker to close conn: a read must end
// in EOF (or a reset), not in the test's own timeout and not with more data.
func wantClosed(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := br.Read(make([]byte, 1))
	switch {
	case n > 0:
		t.Fatal("the broker sent more after the answer instead of closing the connection")
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatal("the connection is still open after 30 s")
	case err == nil:
		t.Fatal("read returned nothing and no error")
	}
}

func TestIdleKeepAliveConnectionClosed(t *testing.T) {
	t.Parallel()
	addr := startTuned(t, func(c *config.Config) { c.HTTPIdleTimeout = 300 * time.Millisecond })
	conn, br := dialRaw(t, addr)
	for range 2 {
		// Keep-alive works: a second request on the same connection is served...
		fmt.Fprint(conn, "GET /api/v1/pop/queue/q-idle?wait=false HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, body := readAnswer(t, br); resp.StatusCode != http.StatusNoContent || resp.Close {
			t.Fatalf("got %d %q (close %v)", resp.StatusCode, body, resp.Close)
		}
	}
	// ...and once idle, the connection is closed by the broker.
	wantClosed(t, conn, br)
}

// A parked long poll is a request in flight, not an idle connection, and has no body to wait
// for: neither HTTP_READ_TIMEOUT nor HTTP_IDLE_TIMEOUT may end it before its own timeout, with
// or without a (small) body sent along.
func TestLongPollOutlivesConnectionTimeouts(t *testing.T) {
	t.Parallel()
	addr := startTuned(t, func(c *config.Config) {
		c.HTTPIdleTimeout, c.HTTPReadTimeout = 200*time.Millisecond, 200*time.Millisecond
	})
	for _, body := range []string{"", "{}"} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/pop/queue/q-longpoll?wait=true&timeout=1500",
			strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("body %q: the long poll was cut: %v", body, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("body %q: got %d, want 204", body, resp.StatusCode)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Fatalf("body %q: answered after %v, before its 1.5 s timeout", body, waited)
		}
	}
}

// A body that does not arrive within HTTP_READ_TIMEOUT gets 408 with the reference's body, the
// connection is closed, and nothing of it is processed.
func TestSlowBodyGets408(t *testing.T) {
	t.Parallel()
	addr := startTuned(t, func(c *config.Config) { c.HTTPReadTimeout = 500 * time.Millisecond })
	queue := testQueueName(t)
	body := `{"items":[{"queue":"` + queue + `","payload":{"n":1}}]}`
	for _, path := range []string{"/api/v1/push", "/api/v1/transaction"} {
		if path == "/api/v1/transaction" {
			body = `{"operations":[{"type":"push","items":[{"queue":"` + queue + `","payload":1}]}]}`
		}
		conn, br := dialRaw(t, addr)
		// Everything but the last byte: a complete request would be processed.
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body[:len(body)-1])
		resp, got := readAnswer(t, br)
		if resp.StatusCode != http.StatusRequestTimeout || got != `{"error":"Request body timeout"}` {
			t.Fatalf("%s: got %d %q", path, resp.StatusCode, got)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		wantClosed(t, conn, br)
	}
	code, raw := doURL(t, http.MethodGet, "http://"+addr+"/api/v1/pop/queue/"+queue+"?wait=false", nil)
	if code != http.StatusNoContent {
		t.Fatalf("a timed-out body was processed: pop got %d %s", code, raw)
	}
}

// Request line and headers over 1 MiB get 431 and a closed connection; within it they pass.
func TestHeadersOver1MiBGet431(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, size := range []int{512 << 10, 1<<20 + 64<<10} {
		conn, br := dialRaw(t, addr)
		req := "GET /api/v1/pop/queue/q-headers?wait=false HTTP/1.1\r\nHost: x\r\nX-Big: " +
			strings.Repeat("a", size) + "\r\n\r\n"
		// The broker may answer before it has read everything: write while reading.
		go func() { _, _ = io.WriteString(conn, req) }()
		resp, body := readAnswer(t, br)
		if size < 1<<20 {
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("%d bytes of headers: got %d %q, want 204", size, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("%d bytes of headers: got %d %q, want 431", size, resp.StatusCode, body)
		}
		wantClosed(t, conn, br)
	}
}
