package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/testkit"
)

// Overload is not an outage (docs/api/operations.md §9.7): these tests make calls pass their
// deadlines on a healthy database and check that the broker answers them as load, never as
// an outage, and that a database which really was away is served again within 2 s.

// newLockedLog is the broker's log, kept for the test to read and also written to its output.
func newLockedLog(t *testing.T) (*testkit.LogBuffer, *slog.Logger) {
	l := &testkit.LogBuffer{Tee: t.Output()}
	return l, l.Logger()
}

// itemsBody is a push of the given (partition, transactionId) items to queue.
func itemsBody(queue, partition string, keys ...string) map[string]any {
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = map[string]any{"queue": queue, "partition": partition, "transactionId": k, "payload": map[string]any{"k": k}}
	}
	return map[string]any{"items": items}
}

// popKeys pops up to batch messages of queue/partition and returns their transactionIds.
func popKeys(t *testing.T, base, queue, partition string, batch int) (int, []string) {
	t.Helper()
	r := call(base, "GET", fmt.Sprintf("/api/v1/pop/queue/%s/partition/%s?wait=false&batch=%d&autoAck=true", queue, partition, batch), nil)
	if r.code != 200 {
		return r.code, nil
	}
	var body struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("pop answer %s: %v", r.body, err)
	}
	var keys []string
	for _, m := range body.Messages {
		keys = append(keys, m.TransactionID)
	}
	return r.code, keys
}

// A push whose call passes a small DB_REQUEST_TIMEOUT (it waits for a partition another
// session holds locked) is load: it is spooled, while /health stays 200, another queue's pop
// is served and a push to another partition is written and visible to a pop at once; nothing
// is logged as an outage, and queen_overload_answers_total counts the push. The spooled
// record's replay passes its deadline too while the lock is held, is retried smaller and then
// under DB_STATEMENT_TIMEOUT, so it is written as soon as the lock goes, and the pushes to
// the same partition that queued behind it follow in order.
//
// DB_CONNECTION_TIMEOUT is 2 s (the default) and DB_REQUEST_TIMEOUT 1 s, not 300 ms each: the
// outage probe must open a new connection and answer within DB_CONNECTION_TIMEOUT, and beside
// two busy loops and the rest of the suite a new backend took up to 0.5 s (with 300 ms the
// probe failed once, an outage by definition); the calls that must succeed (the other queue's
// pop, the push to the free partition) get 1 s. The lock is held until the replay has passed
// its deadline (its "retrying smaller" line), not for a fixed time.
func TestSlowPushIsLoadNotAnOutage(t *testing.T) {
	ctx := context.Background()
	schema := freshSchema("overload")
	cfg := productionConfig(t, testDSN, schema)
	cfg.DBConnectionTimeout, cfg.DBRequestTimeout, cfg.DBStatementTimeout = 2*time.Second, time.Second, 20*time.Second
	log, logger := newLockedLog(t)
	a := startApp(t, cfg, app.WithLogger(logger))
	base := a.URL()

	// The queue and its partitions exist, and their functions are compiled on a connection.
	for _, p := range []string{"held", "free"} {
		if r := call(base, "POST", "/api/v1/push", itemsBody("slow", p, "warm-"+p)); r.code != 201 {
			t.Fatalf("warm-up push: %d %s", r.code, r.body)
		}
	}
	waitDrained(t, base)
	if r := call(base, "POST", "/api/v1/push", itemsBody("other", "Default", "o-1")); r.code != 201 {
		t.Fatalf("push: %d %s", r.code, r.body)
	}
	waitDrained(t, base)
	for _, p := range []string{"held", "free"} {
		popKeys(t, base, "slow", p, 10)
	}

	// Another session holds the partition's row: pushes to it wait for the lock.
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var locked int
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %[1]s.partitions p JOIN %[1]s.queues q ON q.id = p.queue_id
		WHERE q.name = 'slow' AND p.name = 'held' FOR UPDATE OF p) x`, pgx.Identifier{schema}.Sanitize())).Scan(&locked); err != nil || locked != 1 {
		t.Fatalf("lock the partition: %v (%d rows)", err, locked)
	}

	r := call(base, "POST", "/api/v1/push", itemsBody("slow", "held", "s-1", "s-2", "s-3"))
	if r.code != 201 || !strings.Contains(r.body, `"status":"buffered"`) {
		t.Fatalf("push to the held partition: %d %s, want 201 buffered", r.code, r.body)
	}
	if r := call(base, "POST", "/api/v1/push", itemsBody("slow", "held", "s-4")); r.code != 201 || !strings.Contains(r.body, `"status":"buffered"`) {
		t.Fatalf("next push to the held partition: %d %s, want 201 buffered (behind the spooled one)", r.code, r.body)
	}
	if r := call(base, "GET", "/health", nil); r.code != 200 {
		t.Errorf("/health during the slow push: %d %s", r.code, r.body)
	}
	if code, keys := popKeys(t, base, "other", "Default", 10); code != 200 || len(keys) != 1 {
		t.Errorf("another queue's pop: %d %v, want its message", code, keys)
	}
	pushedAt := time.Now()
	if r := call(base, "POST", "/api/v1/push", itemsBody("slow", "free", "f-1")); r.code != 201 || strings.Contains(r.body, "buffered") {
		t.Errorf("push to another partition: %d %s, want it written", r.code, r.body)
	}
	for {
		code, keys := popKeys(t, base, "slow", "free", 10)
		if code == 200 && len(keys) == 1 && keys[0] == "f-1" {
			t.Logf("a push to another partition was visible %v after it was sent", time.Since(pushedAt).Round(time.Millisecond))
			break
		}
		if time.Since(pushedAt) > 3*time.Second {
			t.Fatalf("the push to another partition is not visible after %v: %d %v", time.Since(pushedAt), code, keys)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval of a bounded wait
	}

	// The spooled record's replay passes its deadline behind the lock and is retried smaller;
	// once the lock goes, the partition is written in order.
	testkit.Eventually(t, time.Minute, 10*time.Millisecond, func() error {
		if !strings.Contains(log.String(), "retrying smaller") {
			return errors.New("the replay of the spooled push did not pass its deadline")
		}
		return nil
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitDrained(t, base)
	code, keys := popKeys(t, base, "slow", "held", 10)
	if code != 200 || strings.Join(keys, ",") != "s-1,s-2,s-3,s-4" {
		t.Errorf("the held partition after the lock: %d %v, want s-1..s-4 in order", code, keys)
	}

	text := log.String()
	if strings.Contains(text, "database unavailable") {
		t.Error("an outage was logged for a slow call on a healthy database")
	}
	metrics := call(base, "GET", "/metrics/prometheus", nil)
	if !strings.Contains(metrics.body, `queen_overload_answers_total{route="/api/v1/push"} `) {
		t.Errorf("queen_overload_answers_total does not count the spooled push:\n%s", grepLines(metrics.body, "overload"))
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A database frozen for 12 s under load (the network between broker and PostgreSQL black-holes:
// connections open, nothing answers), then thawed: pop, ack, transaction and /health answer
// normally within 2 s of the thaw (the probe runs at least every 500 ms, and its success drops
// every connection opened before or during the outage). The assertion allows three times that.
func TestThawedDatabaseIsServedWithinTwoSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes the database for 12 s")
	}
	target, through := proxied(t, testDSN)
	p := newProxy(t, target)
	cfg := frozenConfig(t, through(p.ln.Addr()), freshSchema("thaw"))
	cfg.DBPoolSize = 10
	checkServedAfterFreeze(t, cfg, p.freeze, p.thaw)
}

// checkServedAfterFreeze starts a broker on cfg, loads it with producers and consumers, calls
// freeze, waits 12 s, calls thaw, and requires pop, ack, transaction and /health to answer
// normally within 2 s of the thaw (three times that allowed); it prints the time taken.
func checkServedAfterFreeze(t *testing.T, cfg config.Config, freeze, thaw func()) {
	t.Helper()
	log, logger := newLockedLog(t)
	a := startApp(t, cfg, app.WithLogger(logger))
	base := a.URL()
	pushEventually(t, base, "healthy")
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("t-%03d", i)
	}
	if r := call(base, "POST", "/api/v1/push", itemsBody("thaw", "Default", keys...)); r.code != 201 {
		t.Fatalf("push: %d %s", r.code, r.body)
	}
	waitDrained(t, base)

	// Load across the freeze: producers and consumers of another queue.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				call(base, "POST", "/api/v1/push", itemsBody("thaw-load", fmt.Sprint(w), fmt.Sprintf("l%d-%d", w, i)))
				call(base, "GET", "/api/v1/pop/queue/thaw-load?wait=false&autoAck=true", nil)
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // real elapsed time, not an ordering: the load runs before the freeze
	freeze()
	time.Sleep(12 * time.Second) // real elapsed time: the freeze lasts past every request bound
	thaw()
	thawedAt := time.Now()

	var took time.Duration
	for {
		if serves(t, base) {
			took = time.Since(thawedAt)
			break
		}
		if time.Since(thawedAt) > time.Minute {
			t.Fatal("not served a minute after the thaw")
		}
		time.Sleep(20 * time.Millisecond) // a poll interval of a bounded wait
	}
	close(stop)
	wg.Wait()
	t.Logf("pop, ack, transaction and /health served again %v after the thaw", took.Round(time.Millisecond))
	if took > 3*2*time.Second {
		t.Errorf("served again %v after the thaw, want within 2 s", took)
	}
	if text := log.String(); !strings.Contains(text, "database available again") {
		t.Error("the outage's end was not logged")
	}
}

// serves reports whether /health, a pop, the ack of what it got and a transaction all answer
// normally, in that order (a round that fails early consumes no message).
func serves(t *testing.T, base string) bool {
	if r := call(base, "GET", "/health", nil); r.code != 200 {
		return false
	}
	r := call(base, "GET", "/api/v1/pop/queue/thaw?wait=false", nil)
	if r.code != 200 {
		return false
	}
	var popped struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
			LeaseID       string `json:"leaseId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.body), &popped); err != nil || len(popped.Messages) == 0 {
		t.Fatalf("pop answer %s: %v", r.body, err)
	}
	m := popped.Messages[0]
	ack := call(base, "POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
		"leaseId": m.LeaseID, "status": "completed"})
	if ack.code != 200 || !strings.Contains(ack.body, `"success":true`) {
		return false
	}
	txn := call(base, "POST", "/api/v1/transaction", map[string]any{"operations": []any{
		map[string]any{"type": "push", "items": []any{map[string]any{"queue": "thaw-txn", "payload": map[string]any{"n": 1}}}}}})
	return txn.code == 200 && strings.Contains(txn.body, `"success":true`)
}
