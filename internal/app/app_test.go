package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testkit"
)

var testDSN string

func TestMain(m *testing.M) {
	if os.Getenv("QUEEN_SPOOL_CRASH_DIR") != "" || os.Getenv("QUEEN_STREAMS_CRASH_DSN") != "" {
		// The child of TestSpoolSurvivesKill needs no database of its own, and as it is killed
		// it would leave one behind.
		os.Exit(m.Run())
	}
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

// productionConfig is what cmd/queen runs with on an empty environment, over dsn and schema,
// on a free loopback port, with profiling on: every part an App can start, starts.
func productionConfig(t *testing.T, dsn, schema string) config.Config {
	t.Helper()
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL, cfg.DBSchema, cfg.DBPoolSize = dsn, schema, 5
	cfg.Host, cfg.Port, cfg.PprofAddr = "127.0.0.1", 0, "127.0.0.1:0"
	cfg.LogLevel = "warn"
	cfg.FileBufferDir = t.TempDir() // one spool per App: the directory is exclusive
	return cfg
}

// freshSchema names a schema no earlier run used, so the tests pass under -count=N.
func freshSchema(prefix string) string { return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()) }

// goroutines maps the id of every live goroutine to its stack.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if m := goroutineID.FindStringSubmatch(g); m != nil {
			out[m[1]] = g
		}
	}
	return out
}

var goroutineID = regexp.MustCompile(`^goroutine (\d+) `)

// checkNoNewGoroutines fails unless every goroutine absent from before has ended; goroutines
// get a few seconds to return after the Stop that ended them.
func checkNoNewGoroutines(t *testing.T, before map[string]string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var leaked []string
		for id, stack := range goroutines() {
			if _, ok := before[id]; !ok {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines outlived Stop:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond) // a poll interval of a bounded wait
	}
}

// waitHub waits until cond holds of the App's parked pops, and fails the test after 10 s.
func waitHub(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if !cond() {
			return fmt.Errorf("the pop is not %s", what)
		}
		return nil
	})
}

type obj = map[string]any

// An App started with every part (migration, metrics loop, job schedule, listener,
// profiling) serves a push, a long-polling pop and an ack, and after Stop not one goroutine
// it started is left.
func TestStopEndsEveryGoroutine(t *testing.T) {
	before := goroutines()
	ctx := context.Background()
	a, err := app.New(ctx, productionConfig(t, testDSN, freshSchema("app_leak")), app.WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			a.Stop()
		}
	}()
	tr := &http.Transport{}
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	call := func(method, path string, body any) (int, any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		}
		req, _ := http.NewRequest(method, a.URL()+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, nil
		}
		defer resp.Body.Close()
		var out any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}

	// The pop parks first, so the push has to wake it.
	type popAnswer struct {
		code int
		body any
	}
	popped := make(chan popAnswer, 1)
	go func() {
		code, body := call("GET", "/api/v1/pop/queue/leak?wait=true&timeout=10000", nil)
		popped <- popAnswer{code, body}
	}()
	waitHub(t, "idle after an empty first attempt", func() bool { return a.Hub().Idle() == 1 })
	if code, body := call("POST", "/api/v1/push", obj{"items": []obj{{"queue": "leak", "payload": obj{"n": 1}, "transactionId": "m1"}}}); code != http.StatusCreated {
		t.Fatalf("push: %d %v", code, body)
	}
	p := <-popped
	answer, _ := p.body.(obj)
	msgs, _ := answer["messages"].([]any)
	if p.code != http.StatusOK || len(msgs) != 1 {
		t.Fatalf("pop: %d %v", p.code, p.body)
	}
	m := msgs[0].(obj)
	ack := obj{"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"}
	if code, body := call("POST", "/api/v1/ack", ack); code != http.StatusOK || fmt.Sprint(body) == "" ||
		body.([]any)[0].(obj)["success"] != true {
		t.Fatalf("ack: %d %v", code, body)
	}

	// A pop still parked at Stop is answered at once (204), not left hanging.
	go func() {
		code, body := call("GET", "/api/v1/pop/queue/leak?wait=true&timeout=60000", nil)
		popped <- popAnswer{code, body}
	}()
	waitHub(t, "parked", func() bool { return a.Hub().Parked() == 1 })
	start := time.Now()
	a.Stop()
	stopped = true
	if p := <-popped; p.code != http.StatusNoContent {
		t.Errorf("pop parked at Stop: %d %v, want 204", p.code, p.body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v", d)
	}
	a.Stop() // again: a no-op
	tr.CloseIdleConnections()
	checkNoNewGoroutines(t, before)
}

// With the database down, an App serves anyway and retries the migration and the listener in
// the background; Stop ends those goroutines too.
func TestStopEndsEveryGoroutineWithTheDatabaseDown(t *testing.T) {
	before := goroutines()
	ctx := context.Background()
	cfg := productionConfig(t, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=1", "app_down")
	cfg.LogLevel = "error"
	a, err := app.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(a.URL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/health without a database: %d, want 503", resp.StatusCode)
	}
	time.Sleep(1200 * time.Millisecond) // real elapsed time, not an ordering: the migration retry runs once
	a.Stop()
	http.DefaultClient.CloseIdleConnections()
	checkNoNewGoroutines(t, before)
}

// Stop without Start releases what New acquired and leaves nothing running.
func TestStopWithoutStart(t *testing.T) {
	before := goroutines()
	a, err := app.New(context.Background(), productionConfig(t, testDSN, freshSchema("app_unstarted")))
	if err != nil {
		t.Fatal(err)
	}
	a.Stop()
	if a.URL() != "" {
		t.Errorf("URL %q of an App never started", a.URL())
	}
	checkNoNewGoroutines(t, before)
}

// New refuses a configuration that names no database: starting one is the caller's business.
func TestNewWithoutDatabase(t *testing.T) {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.New(context.Background(), cfg); err == nil {
		t.Fatal("New accepted a configuration without a database")
	}
}
