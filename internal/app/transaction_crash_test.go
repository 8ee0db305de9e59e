package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/testkit"
)

// The child of TestTransactionCallSurvivesKill: a broker over the parent's schema with one
// consume slot, so that concurrent transactions queue behind it and are merged, serving until
// it is killed. It prints its URL.
func TestTransactionCrashChild(t *testing.T) {
	cfg := childSchemaConfig(t, "TXN_CRASH", "TestTransactionCallSurvivesKill")
	cfg.ConsumeConcurrency = 1
	serveUntilKilled(t, cfg)
}

// kill -9 of the broker in the middle of a merged transaction call (docs/design.md, "Group
// commit for consumers"): every pipeline stage of the call, and of the calls queued behind it,
// ends with its input settled and its output stored, or with neither; a client's retry of the
// same stage is then applied (neither) or answered QDUP (both), never applied twice.
//
// The call is caught mid-way deterministically. Stage 0 goes first and waits on its input's
// consumer row, which the test holds, keeping the one consume slot; the other stages queue
// behind it and, 250 ms later, go in without a slot as merged calls. The test also holds an
// uncommitted message with the output key of one stage (K), so the merged call that carries K
// has run the stages before K in their subtransactions and waits on K's insert; a call behind
// it waits for the output partition it holds. The broker is killed there. Then either
// PostgreSQL ends the waiting sessions ("aborted": nothing of theirs commits) or the test's
// transaction is rolled back and the calls run to their end with nobody to answer
// ("orphaned").
func TestTransactionCallSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker in a subprocess")
	}
	t.Run("aborted", func(t *testing.T) { transactionCrash(t, true) })
	t.Run("orphaned", func(t *testing.T) { transactionCrash(t, false) })
}

func transactionCrash(t *testing.T, terminate bool) {
	const stages, held = 30, 12 // held: K, the stage whose output key the test holds
	ctx := context.Background()
	schema := freshSchema("txn_crash")
	parent := startApp(t, productionConfig(t, testDSN, schema), app.WithLogger(quietLogger()))
	base := parent.URL()
	must := func(method, path string, body any) answer {
		t.Helper()
		r := call(base, method, path, body)
		if r.err != nil || r.code >= 300 {
			t.Fatalf("%s %s: %v %d %s", method, path, r.err, r.code, r.body)
		}
		return r
	}
	// The inputs, one per partition; the output partition exists (a merged call runs only
	// stages whose partitions exist, see qg_transaction_many).
	items := []any{map[string]any{"queue": "out", "partition": "o", "payload": "seed", "transactionId": "seed"},
		map[string]any{"queue": "out", "partition": "o0", "payload": "seed", "transactionId": "seed"}}
	must("POST", "/api/v1/push", map[string]any{"items": items})
	items = items[:0]
	for i := range stages {
		items = append(items, map[string]any{"queue": "in", "partition": fmt.Sprintf("p%02d", i), "payload": i,
			"transactionId": fmt.Sprintf("in-%d", i)})
	}
	must("POST", "/api/v1/push", map[string]any{"items": items})
	bodies := make([]map[string]any, stages)
	for i := range stages {
		output := "o"
		if i == 0 {
			output = "o0" // stage 0 must not hold the partition the merged calls write
		}
		var popped struct {
			PartitionID string `json:"partitionId"`
			LeaseID     string `json:"leaseId"`
		}
		r := must("GET", fmt.Sprintf("/api/v1/pop/queue/in/partition/p%02d?batch=1&wait=false", i), nil)
		if json.Unmarshal([]byte(r.body), &popped) != nil || popped.LeaseID == "" {
			t.Fatalf("pop p%02d: %s", i, r.body)
		}
		bodies[i] = map[string]any{"operations": []any{
			map[string]any{"type": "ack", "transactionId": fmt.Sprintf("in-%d", i), "partitionId": popped.PartitionID, "status": "completed"},
			map[string]any{"type": "push", "items": []any{map[string]any{"queue": "out", "partition": output, "payload": i,
				"transactionId": fmt.Sprintf("out-%d", i)}}},
		}, "requiredLeases": []any{popped.LeaseID}}
	}

	db, watch := crashConns(t, schema)
	holder, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var holderPID int
	if err := holder.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `INSERT INTO messages (partition_id, position, id, transaction_id, payload, created_at)
		SELECT p.id, 1000000000, gen_random_uuid(), $1, '"held"', now()
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = 'out' AND p.name = 'o'`,
		fmt.Sprintf("out-%d", held)); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM consumers c JOIN partitions p ON p.id = c.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = 'in' AND p.name = 'p00' FOR UPDATE OF c`); err != nil {
		t.Fatal(err)
	}
	blocked := func(query string) (int, error) {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1 = ANY (pg_blocking_pids(pid)) AND query LIKE $2 AND state = 'active'`, holderPID, query).Scan(&n)
		return n, err
	}

	cmd, child := startSchemaChild(t, "TestTransactionCrashChild", "TXN_CRASH", schema)
	lost := make(chan answer, stages)
	var wg sync.WaitGroup
	send := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lost <- call(child, "POST", "/api/v1/transaction", bodies[i])
		}()
	}
	send(0)
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		n, err := blocked("%qg_transaction(%")
		if err == nil && n == 0 {
			err = fmt.Errorf("stage 0 does not wait on its consumer row yet")
		}
		return err
	})
	for i := 1; i < stages; i++ {
		send(i)
	}

	// A merged call waits on the held key: it has run the stages before K by then. Every stage
	// is sent (and, with one slot and calls taking all that wait, inside a call) before the kill.
	var waiting int
	testkit.Eventually(t, time.Minute, 20*time.Millisecond, func() (err error) {
		waiting, err = blocked("%qg_transaction_many(%")
		if err == nil && waiting == 0 {
			err = fmt.Errorf("no merged call waits on the held key yet")
		}
		return err
	})
	// Real elapsed time: it widens the window in which the calls behind it start; the checks
	// below hold whatever state the kill finds.
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-call
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wg.Wait()
	close(lost)
	answered := map[string]bool{} // stages answered before the kill, by output key
	for a := range lost {
		var ans struct {
			Success bool `json:"success"`
			Results []struct {
				TransactionID string `json:"transactionId"`
				Type          string `json:"type"`
			} `json:"results"`
		}
		switch {
		case a.err != nil: // unanswered: the broker died first
		case a.code != 200 || json.Unmarshal([]byte(a.body), &ans) != nil || !ans.Success:
			t.Errorf("a stage failed before the kill: %d %s", a.code, a.body)
		default:
			for _, r := range ans.Results {
				if r.Type == "push" {
					answered[r.TransactionID] = true
				}
			}
		}
	}
	// Only this package's database: other packages' tests run transactions on the same server
	// at the same time (httpapi's concurrency tests answered 500 when this ended theirs).
	endAfterKill(t, watch, holder, terminate,
		"query LIKE '%qg_transaction%' AND state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()")

	// Each stage all or nothing.
	settled := transactionsSettled(t, db, stages)
	var done int
	for _, s := range settled {
		if s {
			done++
		}
	}
	t.Logf("after the kill: %d of %d stages settled, %d answered before it; %d merged calls waited on the held key",
		done, stages, len(answered), waiting)
	for i, s := range settled {
		if answered[fmt.Sprintf("out-%d", i)] && !s {
			t.Errorf("stage %d was answered as committed and is not settled", i)
		}
	}
	if terminate && (settled[held] || settled[0]) {
		t.Fatal("a stage a terminated call waited on was applied")
	}

	// The client retries every stage (on another broker): applied once, or QDUP.
	for i := range stages {
		r := must("POST", "/api/v1/transaction", bodies[i])
		var ans struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if json.Unmarshal([]byte(r.body), &ans) != nil {
			t.Fatalf("retry of stage %d: %s", i, r.body)
		}
		if settled[i] && (ans.Success || !strings.HasPrefix(ans.Error, "QDUP")) || !settled[i] && !ans.Success {
			t.Errorf("retry of stage %d after settled=%v: %s", i, settled[i], r.body)
		}
	}
	for i, s := range transactionsSettled(t, db, stages) {
		if !s {
			t.Errorf("stage %d is not settled after its retry", i)
		}
	}
}

// transactionsSettled reports, per stage of the transaction crash test, whether its input is
// acked and its output stored, failing the test when a stage has one without the other or its
// output twice.
func transactionsSettled(t *testing.T, db *pgx.Conn, stages int) []bool {
	t.Helper()
	out := make([]bool, stages)
	for i := range stages {
		var acked bool
		var outputs int
		err := db.QueryRow(context.Background(), `SELECT
			coalesce((SELECT c.cursor >= 1 FROM consumers c JOIN partitions p ON p.id = c.partition_id
			          JOIN queues q ON q.id = p.queue_id WHERE q.name = 'in' AND p.name = $1), false),
			(SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
			 WHERE q.name = 'out' AND p.name IN ('o', 'o0') AND m.transaction_id = $2)`,
			fmt.Sprintf("p%02d", i), fmt.Sprintf("out-%d", i)).Scan(&acked, &outputs)
		if err != nil {
			t.Fatal(err)
		}
		if outputs > 1 || acked != (outputs == 1) {
			t.Fatalf("stage %d: input acked=%v with %d outputs", i, acked, outputs)
		}
		out[i] = acked
	}
	return out
}
