package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// testDSN is this package's own database, migrated once.
var testDSN string

func TestMain(m *testing.M) {
	// No test reads the user's configuration or environment: contexts are tested with a
	// configuration file of their own.
	dir, err := os.MkdirTemp("", "queenctl-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("QUEENCTL_CONFIG", filepath.Join(dir, "none", "config.yaml"))
	os.Unsetenv("QUEEN_SERVER")
	os.Unsetenv("QUEEN_TOKEN")
	testserver.Main(m, &testDSN, func() int {
		defer os.RemoveAll(dir)
		return m.Run()
	})
}

// bundle is one test's broker and SDK client.
type bundle struct {
	url string
	c   *queen.Client
}

// setup starts a broker of the test's own (commands are run against real brokers).
func setup(t *testing.T) *bundle {
	t.Helper()
	srv := testserver.Start(t, testDSN, testserver.Options{})
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{url: srv.URL, c: c}
}

// result is what one queenctl run produced.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs queenctl in-process against the bundle's broker, with stdin as its input.
func (b *bundle) ctl(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return b.ctlCtx(t, context.Background(), stdin, args...)
}

func (b *bundle) ctlCtx(t *testing.T, ctx context.Context, stdin string, args ...string) result {
	t.Helper()
	var out, errOut testkit.LogBuffer
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	code := runIO(ctx, append([]string{"--server", b.url}, args...), strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// want fails the test unless the run ended with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// lines splits stdout into non-empty lines.
func (r result) lines() []string {
	var out []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// refreshStats recomputes the counters the queue detail shows (they come from the stats job,
// docs/api/admin-api.md "Freshness"), retrying while another test's refresh holds the lock.
func (b *bundle) refreshStats(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		resp, err := http.Post(b.url+"/api/v1/stats/refresh", "application/json", nil)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte("skipped")) {
			return fmt.Errorf("stats refresh: %d %s", resp.StatusCode, body)
		}
		return nil
	})
}
