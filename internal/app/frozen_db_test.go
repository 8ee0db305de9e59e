package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
)

// The deadlines of docs/api/operations.md §9.1 against a PostgreSQL that accepts TCP and never
// answers (a frozen host, a network black hole): every route answers within
// DB_CONNECTION_TIMEOUT + its work deadline + 1 s, with the reference's status. The assertions
// allow three times that bound, so a slow machine does not make them flaky, while a route
// without a deadline (which hangs until the client gives up) still fails them.

const (
	frozenConnTimeout    = 300 * time.Millisecond
	frozenRequestTimeout = 500 * time.Millisecond
	frozenBulkTimeout    = time.Second
)

// routeBound is the reference's bound for a route whose work deadline is work.
func routeBound(work time.Duration) time.Duration { return frozenConnTimeout + work + time.Second }

// blackHole is a TCP listener on 127.0.0.1 that accepts connections and never answers.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &blackHole{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c) // held open, never read or written
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-h.done
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
	})
	return h
}

// frozenConfig is the production configuration over dsn with small database deadlines.
func frozenConfig(t *testing.T, dsn, schema string) config.Config {
	t.Helper()
	cfg := productionConfig(t, dsn, schema)
	cfg.PprofAddr = ""
	cfg.DBConnectionTimeout, cfg.DBRequestTimeout, cfg.DBStatementTimeout = frozenConnTimeout, frozenRequestTimeout, frozenBulkTimeout
	return cfg
}

// startApp starts an App and stops it when the test ends.
func startApp(t *testing.T, cfg config.Config, opts ...app.Option) *app.App {
	t.Helper()
	ctx := context.Background()
	a, err := app.New(ctx, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}

// routeCase is one request of a route family and the answer the reference gives it when the
// database does not answer.
type routeCase struct {
	name, method, path string
	body               any
	code               int
	bound              time.Duration
}

// frozenRoutes lists every route family: data path, admin reads, a bulk admin route, /health.
func frozenRoutes() []routeCase {
	work := routeBound(frozenRequestTimeout)
	pid, lease := uuid.NewString(), uuid.NewString()
	ack := map[string]any{"transactionId": "t-1", "partitionId": pid, "leaseId": lease, "status": "completed", "consumerGroup": "g"}
	return []routeCase{
		// A push is spooled (docs/api/operations.md §4.1): 201 buffered.
		{"push", "POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "frozen", "payload": map[string]any{"n": 1}}}}, 201, work},
		{"pop", "GET", "/api/v1/pop/queue/frozen?wait=false", nil, 503, work},
		{"pop wait", "GET", "/api/v1/pop/queue/frozen?wait=true&timeout=2000", nil, 503, work},
		{"pop partition", "GET", "/api/v1/pop/queue/frozen/partition/p1?wait=false", nil, 503, work},
		{"pop namespace", "GET", "/api/v1/pop?namespace=ns&wait=true&timeout=2000", nil, 503, work},
		{"ack", "POST", "/api/v1/ack", ack, 503, work},
		{"ack batch", "POST", "/api/v1/ack/batch", map[string]any{"consumerGroup": "g", "acknowledgments": []any{ack}}, 503, work},
		{"lease extend", "POST", "/api/v1/lease/" + lease + "/extend", map[string]any{"seconds": 30}, 503, work},
		{"transaction", "POST", "/api/v1/transaction", map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{map[string]any{"queue": "frozen", "payload": map[string]any{"n": 1}}}}}}, 500, work},
		{"configure", "POST", "/api/v1/configure", map[string]any{"queue": "frozen"}, 503, work},
		{"queues", "GET", "/api/v1/resources/queues", nil, 503, work},
		{"queue detail", "GET", "/api/v1/resources/queues/frozen", nil, 503, work},
		{"overview", "GET", "/api/v1/resources/overview", nil, 503, work},
		{"messages", "GET", "/api/v1/messages", nil, 503, work},
		{"dlq", "GET", "/api/v1/dlq", nil, 503, work},
		{"status", "GET", "/api/v1/status", nil, 503, work},
		{"status queues", "GET", "/api/v1/status/queues", nil, 503, work},
		{"consumer groups", "GET", "/api/v1/consumer-groups", nil, 503, work},
		// A queue nobody pops: deleting the popped one races with pops registering on it, which
		// is not what these tests are about.
		{"queue deletion", "DELETE", "/api/v1/resources/queues/frozen-gone", nil, 503, routeBound(frozenBulkTimeout)},
		{"health", "GET", "/health", nil, 503, frozenConnTimeout + time.Second},
	}
}

// answer is one HTTP exchange's outcome.
type answer struct {
	code int
	body string
	took time.Duration
	err  error
	at   time.Time // when the request was sent
}

// call sends one request; the client gives up after a minute, far beyond every bound.
func call(base, method, path string, body any) answer {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return answer{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(start), at: start}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b), took: time.Since(start), at: start}
}

// checkUnavailable requires the reference's unavailable answer of rc within three times its bound.
func checkUnavailable(t *testing.T, rc routeCase, a answer) {
	t.Helper()
	t.Logf("%-16s %d in %v (bound %v)", rc.name, a.code, a.took.Round(time.Millisecond), rc.bound)
	switch {
	case a.err != nil:
		t.Errorf("%s: %v after %v", rc.name, a.err, a.took)
		return
	case a.code != rc.code:
		t.Errorf("%s: %d %s, want %d", rc.name, a.code, a.body, rc.code)
	case a.took > 3*rc.bound:
		t.Errorf("%s: answered after %v, bound %v", rc.name, a.took, rc.bound)
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(a.body), &body)
	switch {
	case rc.name == "push":
		if !strings.Contains(a.body, `"status":"buffered"`) {
			t.Errorf("push: body %s, want buffered items", a.body)
		}
	case rc.name == "health":
		if body["status"] != "unhealthy" {
			t.Errorf("health: %s, want status unhealthy", a.body)
		}
	case body["error"] != "Database unavailable":
		t.Errorf("%s: body %s, want error Database unavailable", rc.name, a.body)
	}
}

// A broker whose database accepts TCP and never answers, from the start: no connection ever
// opens, and every route answers 503 (500 on the transaction route) within its bound.
func TestFrozenDatabaseAnswersEveryRouteInTime(t *testing.T) {
	h := newBlackHole(t)
	dsn := fmt.Sprintf("postgres://queen@%s/queen?sslmode=disable", h.ln.Addr())
	a := startApp(t, frozenConfig(t, dsn, "frozen"), app.WithoutMigration(), app.WithLogger(quietLogger()))
	for _, rc := range frozenRoutes() {
		checkUnavailable(t, rc, call(a.URL(), rc.method, rc.path, rc.body))
	}
	// The same, all at once: waits in front of the database (coalescer, pop gate, pool) count
	// against the connection timeout, so a crowd is answered as fast as one.
	var wg sync.WaitGroup
	for _, rc := range frozenRoutes() {
		for range 5 {
			wg.Go(func() { checkUnavailable(t, rc, call(a.URL(), rc.method, rc.path, rc.body)) })
		}
	}
	wg.Wait()
}

// proxy forwards TCP connections to a PostgreSQL server until frozen: then it stops forwarding
// in both directions (a black hole) over the connections already open and new ones alike,
// until thawed, when what it held goes through.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed at thaw; replaced at freeze
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, thawed: make(chan struct{})}
	close(p.thawed)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.thaw()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(s, c) })
		p.wg.Go(func() { p.pipe(c, s) })
	}
}

// pipe copies from src to dst, holding each chunk while the proxy is frozen.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			<-thawed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen, p.thawed = true, make(chan struct{})
	}
}

func (p *proxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// proxied returns the TCP address of dsn's server, and dsn rewritten to reach it through a
// proxy at addr (given later, by the second function).
func proxied(t *testing.T, dsn string) (target string, through func(addr net.Addr) string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skipf("the test database is on a unix socket (%s); the proxy needs TCP", cfg.Host)
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), func(addr net.Addr) string {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(cfg.User, cfg.Password), Host: addr.String(),
			Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
		return u.String()
	}
}

// The realistic case: the database freezes (here, the network between them black-holes)
// after a healthy start, while the pool holds open connections and requests are in flight.
// Every answer comes within its bound: pushes 201, written or spooled; once the database is
// back, the broker serves again and every spooled push is stored exactly once.
func TestDatabaseFrozenAfterAHealthyStart(t *testing.T) {
	target, through := proxied(t, testDSN)
	p := newProxy(t, target)
	dsn := through(p.ln.Addr())
	schema := freshSchema("frozen_after")
	cfg := frozenConfig(t, dsn, schema)
	cfg.DBPoolSize = 25 // enough that the calls in flight at the freeze hold open connections
	a := startApp(t, cfg, app.WithLogger(testLogger(t)))
	base := a.URL()

	// Healthy: pushes and pops work, and the pool has connections open.
	pushEventually(t, base, "healthy")
	if r := call(base, "GET", "/api/v1/pop/queue/frozen-after?wait=false", nil); r.code != 204 && r.code != 200 {
		t.Fatalf("healthy pop: %d %s", r.code, r.body)
	}

	// Pushes in flight when the network black-holes.
	pushLoop := startPushLoop(base, "w")
	// And every other route family, in flight at the freeze too.
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	inFlight := map[string][]answer{}
	for _, rc := range frozenRoutes() {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := call(base, rc.method, rc.path, rc.body)
				mu.Lock()
				inFlight[rc.name] = append(inFlight[rc.name], r)
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second) // real elapsed time, not an ordering: the load runs before the freeze
	p.freeze()
	frozenAt := time.Now()
	time.Sleep(300 * time.Millisecond) // real elapsed time: requests in flight meet the freeze
	for _, rc := range frozenRoutes() {
		checkUnavailable(t, rc, call(base, rc.method, rc.path, rc.body))
	}
	close(stop)
	wg.Wait()
	pushes := pushLoop()
	p.thaw()
	t.Logf("frozen for %v", time.Since(frozenAt).Round(time.Millisecond))

	for _, rc := range frozenRoutes() {
		var slowest time.Duration
		before, during := map[int]int{}, map[int]int{}
		for _, r := range inFlight[rc.name] {
			slowest = max(slowest, r.took)
			if r.at.Before(frozenAt) {
				before[r.code]++
			} else {
				during[r.code]++
			}
			switch {
			case r.err != nil:
				t.Errorf("%s in flight: %v after %v", rc.name, r.err, r.took)
			case r.took > 3*rc.bound:
				t.Errorf("%s in flight: %d after %v, bound %v", rc.name, r.code, r.took, rc.bound)
			case r.code == 500 && rc.name != "transaction":
				t.Errorf("%s in flight: %d %s", rc.name, r.code, r.body)
			}
		}
		t.Logf("in flight: %-16s slowest %v; answers sent before the freeze %v, during it %v",
			rc.name, slowest.Round(time.Millisecond), before, during)
	}

	// Back: the broker serves again (fresh connections replace the abandoned ones), and what
	// it spooled meanwhile is replayed.
	checkPushesAcrossOutage(t, base, testDSN, schema, pushes, "while the database was frozen")
}

// keyedAnswer is the answer to a push of pushBody(key, 3).
type keyedAnswer struct {
	key string
	a   answer
}

// startPushLoop runs four producers pushing distinct keys to base until the returned stop is
// called, which waits for them and returns every push with its answer.
func startPushLoop(base, prefix string) (stop func() []keyedAnswer) {
	var mu sync.Mutex
	var pushes []keyedAnswer
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				key := fmt.Sprintf("%s%d-%d-%s", prefix, w, i, uuid.NewString())
				r := call(base, "POST", "/api/v1/push", pushBody(key, 3))
				mu.Lock()
				pushes = append(pushes, keyedAnswer{key, r})
				mu.Unlock()
			}
		})
	}
	return func() []keyedAnswer {
		close(done)
		wg.Wait()
		return pushes
	}
}

// checkPushesAcrossOutage checks the pushes sent across an outage once the database is back:
// each answered within its bound, 201 (written or spooled) or 503; some spooled; once the
// spool is drained, every spooled push stored whole exactly once, and each answered 503 whole
// or not at all.
func checkPushesAcrossOutage(t *testing.T, base, dsn, schema string, pushes []keyedAnswer, during string) {
	t.Helper()
	bound := routeBound(frozenRequestTimeout)
	var unavailable, buffered []string
	for _, x := range pushes {
		switch {
		case x.a.err != nil:
			t.Errorf("push %s: %v after %v", x.key, x.a.err, x.a.took)
		case x.a.took > 3*bound:
			t.Errorf("push %s: %d after %v, bound %v", x.key, x.a.code, x.a.took, bound)
		case x.a.code == 503:
			unavailable = append(unavailable, x.key)
		case x.a.code == 201 && strings.Contains(x.a.body, `"status":"buffered"`):
			buffered = append(buffered, x.key)
		case x.a.code != 201:
			t.Errorf("push %s: %d %s", x.key, x.a.code, x.a.body)
		}
	}
	if len(buffered) == 0 {
		t.Error("no push was spooled " + during)
	}
	waitDrained(t, base)
	waitHealthy(t, base)
	pushEventually(t, base, "after the outage")
	checkWholeOrNothing(t, dsn, schema, unavailable, 3)
	checkStoredOnce(t, dsn, schema, buffered, 3)
}

// waitDrained waits until the spool holds nothing (GET /api/v1/status/buffers).
func waitDrained(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := call(base, "GET", "/api/v1/status/buffers", nil)
		if r.code == 200 && strings.Contains(r.body, `"pending":0,`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool not drained: %d %s %v", r.code, r.body, r.err)
		}
		time.Sleep(100 * time.Millisecond) // a poll interval of a bounded wait
	}
}

// pushBody is a push of n items whose transactionIds are key-0 … key-(n-1).
func pushBody(key string, n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": "frozen-after", "transactionId": fmt.Sprintf("%s-%d", key, i), "payload": map[string]any{"i": i}}
	}
	return map[string]any{"items": items}
}

// pushEventually pushes until a push is written (201, not spooled). A new connection compiles the
// database functions on its first call, which may take longer than these tests' short request
// deadline (500 ms), so a healthy broker may answer a few 503s first.
func pushEventually(t *testing.T, base, when string) {
	t.Helper()
	for i := 0; ; i++ {
		r := call(base, "POST", "/api/v1/push", pushBody(fmt.Sprintf("%s-%d-%s", strings.ReplaceAll(when, " ", "-"), i, uuid.NewString()), 3))
		if r.code == 201 && !strings.Contains(r.body, `"status":"buffered"`) {
			return
		}
		if r.code == 201 {
			// Spooled (its first call on a cold connection passed the deadline): later
			// pushes queue behind it until it is replayed.
			waitDrained(t, base)
		}
		if i == 20 {
			t.Fatalf("push %s: %d %s %v", when, r.code, r.body, r.err)
		}
	}
}

// waitHealthy waits until /health answers 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := call(base, "GET", "/health", nil)
		if r.code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy again: %d %s %v", r.code, r.body, r.err)
		}
		time.Sleep(100 * time.Millisecond) // a poll interval of a bounded wait
	}
}

// checkWholeOrNothing requires every push of keys (n items each) to be stored whole or not at
// all: a push answered 503 may have committed, never half.
func checkWholeOrNothing(t *testing.T, dsn, schema string, keys []string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stored := 0
	for _, key := range keys {
		var count int
		err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.messages WHERE transaction_id LIKE $1`,
			pgx.Identifier{schema}.Sanitize()), key+"-%").Scan(&count)
		if err != nil {
			t.Fatal(err)
		}
		if count != 0 && count != n {
			t.Errorf("push %s answered 503 and stored %d of its %d items", key, count, n)
		}
		if count == n {
			stored++
		}
	}
	t.Logf("%d pushes answered 503: %d stored whole (committed as the deadline passed), %d not at all",
		len(keys), stored, len(keys)-stored)
}

// checkStoredOnce requires every push of keys (n items each, spooled) to be stored whole,
// each item exactly once.
func checkStoredOnce(t *testing.T, dsn, schema string, keys []string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT transaction_id FROM %s.messages`, pgx.Identifier{schema}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, k := range stored {
		count[k]++
	}
	for _, key := range keys {
		for i := range n {
			if c := count[fmt.Sprintf("%s-%d", key, i)]; c != 1 {
				t.Errorf("item %s-%d was spooled and stored %d times, want once", key, i, c)
			}
		}
	}
	t.Logf("%d spooled pushes stored exactly once", len(keys))
}

// quietLogger drops the broker's log: the outages these tests cause are expected.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testLogger writes the broker's log to the test's output, shown when it fails or with -v:
// the outage lines (one when it begins, one when it ends) tell what happened.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
