package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/testkit"
)

// The child of TestStreamsCycleSurvivesKill: a broker over the parent's schema, serving until
// it is killed. It prints its URL.
func TestStreamsCrashChild(t *testing.T) {
	serveUntilKilled(t, childSchemaConfig(t, "STREAMS_CRASH", "TestStreamsCycleSurvivesKill"))
}

// kill -9 of the broker in the middle of a cycle (docs/api/streams.md §4.2, §4.4): the cycle's
// state ops, sink push and source ack are applied all together or not at all, and the SDK's
// retry of the same cycle is then applied (if nothing was) or rejected with "Message already
// committed" (if all was), never applied twice.
//
// The cycle is caught mid-way deterministically: the test holds the shard row locked, so the
// cycle's transaction has locked its partitions and consumer row and applied its ack when it
// waits; the broker is killed there. Then either the waiting transaction is ended by
// PostgreSQL (the "aborted" case: the session is terminated, as a server restart or a
// connection check would), or the lock is released and the transaction runs to its end with
// nobody to answer (the "orphaned" case: its commit request was already sent).
func TestStreamsCycleSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker in a subprocess")
	}
	t.Run("aborted", func(t *testing.T) { streamsCrash(t, true) })
	t.Run("orphaned", func(t *testing.T) { streamsCrash(t, false) })
}

func streamsCrash(t *testing.T, terminate bool) {
	ctx := context.Background()
	schema := freshSchema("streams_crash")
	parent := startApp(t, productionConfig(t, testDSN, schema), app.WithLogger(quietLogger()))
	base := parent.URL()
	do := func(base, method, path string, body any) map[string]any {
		t.Helper()
		r := call(base, method, path, body)
		if r.err != nil || r.code >= 300 {
			t.Fatalf("%s %s: %v %d %s", method, path, r.err, r.code, r.body)
		}
		var v map[string]any
		if strings.HasPrefix(r.body, "{") {
			if err := json.Unmarshal([]byte(r.body), &v); err != nil {
				t.Fatalf("%s %s: %s", method, path, r.body)
			}
		}
		return v
	}
	qid := do(base, "POST", "/streams/v1/queries", map[string]any{"name": "crash", "source_queue": "src", "config_hash": "h"})["query_id"].(string)
	do(base, "POST", "/api/v1/push", map[string]any{"items": []any{
		map[string]any{"queue": "src", "partition": "P", "payload": 1, "transactionId": "m1"},
		map[string]any{"queue": "src", "partition": "P", "payload": 2, "transactionId": "m2"},
	}})
	pop := call(base, "GET", "/api/v1/pop/queue/src?batch=10&wait=false&consumerGroup=g", nil)
	var popped struct {
		PartitionID string `json:"partitionId"`
		LeaseID     string `json:"leaseId"`
	}
	if pop.code != 200 || json.Unmarshal([]byte(pop.body), &popped) != nil {
		t.Fatalf("pop: %d %s", pop.code, pop.body)
	}
	// A first, empty cycle creates the shard row the test then holds.
	do(base, "POST", "/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": popped.PartitionID})
	cycle := map[string]any{"query_id": qid, "partition_id": popped.PartitionID, "consumer_group": "g",
		"state_ops":  []any{map[string]any{"type": "upsert", "key": "total", "value": 3}},
		"push_items": []any{map[string]any{"queue": "sink", "partition": "P", "payload": "out"}},
		"ack":        map[string]any{"transactionId": "m2", "leaseId": popped.LeaseID, "status": "completed", "count": 2}}

	db, watch := crashConns(t, schema)
	holder, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT 1 FROM stream_shards WHERE query_id = $1 FOR UPDATE", qid); err != nil {
		t.Fatal(err)
	}

	cmd, child := startSchemaChild(t, "TestStreamsCrashChild", "STREAMS_CRASH", schema)
	lost := make(chan answer, 1)
	go func() { lost <- call(child, "POST", "/streams/v1/cycle", cycle) }()

	// The cycle's transaction waits for the shard; the ack is applied in it by then.
	var backend int
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		err := watch.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE query LIKE '%qg_stream_cycle%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
			  AND datname = current_database()`).Scan(&backend) // not another package's cycle
		if err != nil {
			select {
			case a := <-lost:
				t.Fatalf("the cycle answered while the shard was held: %v %d %s", a.err, a.code, a.body)
			default:
			}
		}
		return err
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-cycle
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if a := <-lost; a.err == nil {
		t.Fatalf("the killed broker answered: %d %s", a.code, a.body)
	}
	endAfterKill(t, watch, holder, terminate, "pid = $1", backend)

	// All or nothing.
	applied := streamsApplied(t, db, qid, popped.PartitionID)
	t.Logf("after the kill: applied=%v", applied)
	if terminate && applied {
		t.Fatal("a terminated cycle was applied")
	}

	// The SDK retries the same cycle (on another broker).
	r := call(base, "POST", "/streams/v1/cycle", cycle)
	var ans struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &ans) != nil {
		t.Fatalf("retry: %d %s", r.code, r.body)
	}
	if applied && (ans.Success || ans.Error != "Message already committed") || !applied && !ans.Success {
		t.Fatalf("retry after applied=%v: %s", applied, r.body)
	}
	if !streamsApplied(t, db, qid, popped.PartitionID) {
		t.Fatal("the cycle is not applied after the retry")
	}
}

// streamsApplied reports whether the crash test's cycle is applied, requiring all of it or
// none of it, and at most once: the state row, the one sink message, the source cursor at 2.
func streamsApplied(t *testing.T, db *pgx.Conn, qid, pid string) bool {
	t.Helper()
	var state, sink, cursor int
	err := db.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM stream_state WHERE query_id = $1 AND key = 'total'),
		(SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		 WHERE q.name = 'sink'),
		(SELECT coalesce(max(cursor), 0) FROM consumers WHERE partition_id = $2 AND consumer_group = 'g')`,
		qid, pid).Scan(&state, &sink, &cursor)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case state == 0 && sink == 0 && cursor == 0:
		return false
	case state == 1 && sink == 1 && cursor == 2:
		return true
	}
	t.Fatalf("partly applied: %d state rows, %d sink messages, cursor %d", state, sink, cursor)
	return false
}
