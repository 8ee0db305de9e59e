package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testserver"
)

var (
	testDSN string
	fix     *fixture
)

func TestMain(m *testing.M) {
	if os.Getenv("QUEEN_IMPORT_CHILD_DSN") != "" {
		// The child of TestImportKilledHalfWay works on its parent's database.
		os.Exit(m.Run())
	}
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer conn.Close(ctx)
		fix = buildFixture(ctx, &mainTB{}, conn)
		return m.Run()
	})
}

// mainTB lets the fixture builder fail in TestMain.
type mainTB struct{ testing.TB }

func (*mainTB) Helper()                   {}
func (*mainTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (*mainTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func runImport(t *testing.T, target string, mod func(*Options)) (*Report, string, error) {
	t.Helper()
	var out bytes.Buffer
	o := Options{SourceDSN: testDSN, TargetDSN: testDSN, TargetSchema: target, Out: &out}
	if mod != nil {
		mod(&o)
	}
	r, err := Run(context.Background(), o)
	return r, out.String(), err
}

// TestImportServesEveryGroupTheRest imports the fixture and checks through a broker's HTTP
// API that every group gets exactly the messages it had not consumed, in order; that a stored
// transactionId is a duplicate; that the DLQ, traces, encrypted payloads and stream state came
// over.
func TestImportServesEveryGroupTheRest(t *testing.T) {
	r, out, err := runImport(t, "qg_serve", nil)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if r.Written["messages"] != r.Read["messages"] || r.Written["messages"] == 0 {
		t.Fatalf("messages read %d, written %d", r.Read["messages"], r.Written["messages"])
	}
	if r.Written["stream state"] != 1 || r.Read["stream state"] != 2 {
		t.Errorf("stream state read %d written %d, want 2 and 1 (one row's partition is gone)", r.Read["stream state"], r.Written["stream state"])
	}
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: "qg_serve", EncryptionKey: testKey})
	// Queue mode and g-new pop orders as a whole, which finds pairs through the pop index
	// (partition_work); the other groups pop partition by partition.
	wholeQueue := func(q, group string) bool { return q == "orders" && (group == "__QUEUE_MODE__" || group == "g-new") }
	byPartition := map[string][]popped{}
	for _, group := range []string{"__QUEUE_MODE__", "g-new"} {
		for _, m := range drain(t, srv.URL, "orders", "", group) {
			p := strings.Split(m.TransactionID, "-")[1]
			byPartition["orders/"+p+"/"+group] = append(byPartition["orders/"+p+"/"+group], m)
		}
	}
	for k, want := range fix.rest {
		qp, group := k[:strings.LastIndex(k, "/")], k[strings.LastIndex(k, "/")+1:]
		q, p, _ := strings.Cut(qp, "/")
		var got []popped
		if wholeQueue(q, group) {
			got = byPartition[k]
		} else {
			got = drain(t, srv.URL, q, p, group)
		}
		var keys []string
		for _, m := range got {
			keys = append(keys, m.TransactionID)
			if want := fix.payloadOf(qp, m.TransactionID); !jsonEqual(m.Data, want) {
				t.Errorf("%s: %s: payload %s, want %s", k, m.TransactionID, m.Data, want)
			}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("%s: got %v\nwant %v", k, keys, want)
		}
	}
	// A stored key is a duplicate; a new one is queued after the imported messages.
	dup := fix.parts["orders/p1"][0].key
	if st := push(t, srv.URL, "orders", "p1", dup); st != "duplicate" {
		t.Errorf("push of imported key %s: %s, want duplicate", dup, st)
	}
	if st := push(t, srv.URL, "orders", "p1", "fresh-1"); st != "queued" {
		t.Errorf("push of a new key: %s, want queued", st)
	}
	if got := drain(t, srv.URL, "orders", "p1", "g-all"); len(got) != 1 || got[0].TransactionID != "fresh-1" {
		t.Errorf("after the push g-all got %v, want only fresh-1", got)
	}
	var dlq struct {
		Messages []struct {
			ErrorMessage  string `json:"errorMessage"`
			ConsumerGroup string `json:"consumerGroup"`
		} `json:"messages"`
		Total int `json:"total"`
	}
	getJSON(t, srv.URL+"/api/v1/dlq?queue=orders", &dlq)
	if dlq.Total != fix.dlq || len(dlq.Messages) != fix.dlq || !strings.HasPrefix(dlq.Messages[0].ErrorMessage, "boom") {
		t.Errorf("DLQ: %+v, want %d entries with their error text", dlq, fix.dlq)
	}
	var traces struct {
		Traces []struct {
			EventType  string   `json:"eventType"`
			TraceNames []string `json:"traceNames"`
		} `json:"traces"`
	}
	first := fix.parts["orders/p1"][0]
	var pid string
	if err := pgtest.RawPool(t, testDSN).QueryRow(context.Background(), "SELECT partition_id FROM qg_serve.messages WHERE id = $1", first.id).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	getJSON(t, srv.URL+"/api/v1/traces/"+pid+"/"+first.key, &traces)
	if len(traces.Traces) != 2 {
		t.Errorf("traces of %s: %+v, want 2", first.key, traces)
	}
}

// TestSecondImportChangesNothing: a rerun after a complete import says so and writes nothing.
func TestSecondImportChangesNothing(t *testing.T) {
	if _, out, err := runImport(t, "qg_twice", nil); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	before := fingerprint(t, "qg_twice", true)
	r, out, err := runImport(t, "qg_twice", nil)
	if err != nil {
		t.Fatalf("second import: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Nothing to do") || r.Written["messages"] != 0 {
		t.Errorf("second run: %q, wrote %v", out, r.Written)
	}
	if after := fingerprint(t, "qg_twice", true); after != before {
		t.Errorf("the second run changed the target")
	}
}

// TestImportRefusesForeignQueue: a queue of a source's name that the import did not make
// stops the run before anything is written.
func TestImportRefusesForeignQueue(t *testing.T) {
	if err := testserver.Migrate(context.Background(), testDSN, "qg_foreign"); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, testDSN, testserver.Options{Schema: "qg_foreign"})
	resp, err := http.Post(srv.URL+"/api/v1/configure", "application/json", strings.NewReader(`{"queue":"plain"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, out, err := runImport(t, "qg_foreign", nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `"plain"`) {
		t.Fatalf("import over a foreign queue: %v\n%s", err, out)
	}
	var n int
	if err := pgtest.RawPool(t, testDSN).QueryRow(context.Background(), "SELECT count(*) FROM qg_foreign.queues").Scan(&n); err != nil || n != 1 {
		t.Errorf("queues after the refusal: %d (%v), want the one configured", n, err)
	}
}

// TestDryRunWritesNothing prints the counts and the mapping and leaves no schema behind.
func TestDryRunWritesNothing(t *testing.T) {
	_, out, err := runImport(t, "qg_dry", func(o *Options) { o.DryRun = true })
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"max_queue_size -> maxSize", "orders (namespace \"shop\"", "leaseTime=60",
		"NULL in Queen, queen-go's default used: priority, ttl", "encryptionEnabled: payloads are copied sealed", "Dry run: nothing was written"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	var exists bool
	if err := pgtest.RawPool(t, testDSN).QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'qg_dry')").Scan(&exists); err != nil || exists {
		t.Errorf("the dry run created the target schema (%v)", err)
	}
}

// TestUnknownSourceSchemaNamesTheDifference: a column added or missing is named.
func TestUnknownSourceSchemaNamesTheDifference(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.RawPool(t, testDSN)
	ddl := strings.ReplaceAll(strings.ReplaceAll(queenDDL, "queen.", "queen_next."), "SCHEMA queen;", "SCHEMA queen_next;")
	ddl = strings.ReplaceAll(ddl, "queen_streams", "queen_next_streams")
	if _, err := pool.Exec(ctx, ddl+`; ALTER TABLE queen_next.messages DROP COLUMN producer_sub;
		ALTER TABLE queen_next.consumer_groups_metadata ADD COLUMN conflation boolean`); err != nil {
		t.Fatal(err)
	}
	_, out, err := runImport(t, "qg_next", func(o *Options) { o.SourceSchema = "queen_next" })
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("import of another version: %v\n%s", err, out)
	}
	for _, want := range []string{"queen_next.messages has no column producer_sub", "queen_next.consumer_groups_metadata has a column this importer does not know: conflation"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// The child of TestImportKilledHalfWay: imports into its schema and stops, half-way through
// a queue's transaction, for its parent to kill it.
func TestImportChild(t *testing.T) {
	dsn, schema := os.Getenv("QUEEN_IMPORT_CHILD_DSN"), os.Getenv("QUEEN_IMPORT_CHILD_SCHEMA")
	if dsn == "" {
		t.Skip("the child of TestImportKilledHalfWay")
	}
	imported := 0
	_, err := Run(context.Background(), Options{SourceDSN: dsn, TargetDSN: dsn, TargetSchema: schema,
		hook: func(step, queue string) {
			if step == "imported" {
				imported++
			}
			if step == "copied messages" && imported == 2 { // two queues committed, the third's messages copied
				fmt.Println("HALF", queue)
				select {} // killed here
			}
		}})
	t.Fatalf("the import ended before the kill: %v", err)
}

// TestImportKilledHalfWay: an import killed with -9 in the middle of a queue, then run again,
// leaves the target as one clean run does.
func TestImportKilledHalfWay(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "QUEEN_IMPORT_CHILD_DSN="+testDSN, "QUEEN_IMPORT_CHILD_SCHEMA=qg_killed")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "HALF") {
				line <- sc.Text()
				return
			}
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("the child ended without reaching the middle")
		}
		t.Log("child at", l)
	case <-time.After(2 * time.Minute):
		t.Fatal("the child did not reach the middle")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var done int
	if err := pgtest.RawPool(t, testDSN).QueryRow(context.Background(), "SELECT count(*) FROM qg_killed.queen_import").Scan(&done); err != nil || done != 2 {
		t.Fatalf("after the kill %d items are recorded (%v), want the 2 committed", done, err)
	}
	r, out, err := runImport(t, "qg_killed", nil)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if len(r.Skipped) != 2 {
		t.Errorf("rerun skipped %v, want the two queues done before the kill", r.Skipped)
	}
	if _, out, err := runImport(t, "qg_clean", nil); err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	if a, b := fingerprint(t, "qg_killed", false), fingerprint(t, "qg_clean", false); a != b {
		t.Errorf("killed and rerun differs from one clean run:\n%s", diffLines(a, b))
	}
}

// fingerprint renders every row the import writes, in a stable order. withTimes includes the
// import's own record times (same target), which differ between two targets.
func fingerprint(t *testing.T, schema string, withTimes bool) string {
	t.Helper()
	importRow := "kind, name, counts::text"
	if withTimes {
		importRow += ", imported_at"
	}
	tables := map[string]string{
		"queues":          "*",
		"partitions":      "*",
		"partition_heads": "*",
		"messages":        "partition_id, position, id, transaction_id, payload::text, trace_id, producer_sub, encrypted, created_at",
		"consumers":       "*",
		"subscriptions":   "*",
		"partition_work":  "*",
		"dlq":             "id, queue_id, partition_id, queue_name, partition_name, consumer_group, message_id, transaction_id, error_message, retry_count, payload::text, trace_id, producer_sub, encrypted, created_at, failed_at",
		"traces":          "id, partition_id, transaction_id, consumer_group, event_type, data::text, worker_id, trace_names, created_at",
		"trace_names":     "*",
		"stream_queries":  "*",
		"stream_shards":   "*",
		"stream_state":    "query_id, partition_id, key, value::text, updated_at",
		"queen_import":    importRow,
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	slices.Sort(names)
	pool := pgtest.RawPool(t, testDSN)
	var b strings.Builder
	for _, n := range names {
		var s string
		q := fmt.Sprintf("SELECT coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '') FROM (SELECT %s FROM %s.%s) r",
			tables[n], pgx.Identifier{schema}.Sanitize(), n)
		if err := pool.QueryRow(context.Background(), q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		fmt.Fprintf(&b, "== %s\n%s\n", n, s)
	}
	return b.String()
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 40 {
		out = out[:40]
	}
	return strings.Join(out, "\n")
}

type popped struct {
	TransactionID string          `json:"transactionId"`
	Data          json.RawMessage `json:"data"`
}

// drain pops one partition (or, with partition "", the whole queue) for group with autoAck
// until it is empty.
func drain(t *testing.T, base, queue, partition, group string) []popped {
	t.Helper()
	var all []popped
	for range 100 {
		q := url.Values{"batch": {"7"}, "wait": {"false"}, "autoAck": {"true"}}
		if group != "__QUEUE_MODE__" {
			q.Set("consumerGroup", group)
		}
		path := "/api/v1/pop/queue/" + queue
		if partition != "" {
			path += "/partition/" + partition
		}
		resp, err := http.Get(base + path + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNoContent {
			return all
		}
		var out struct {
			Messages []popped `json:"messages"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
			t.Fatalf("pop %s/%s %s: %d %s", queue, partition, group, resp.StatusCode, body)
		}
		if len(out.Messages) == 0 {
			return all
		}
		all = append(all, out.Messages...)
	}
	t.Fatalf("pop %s/%s %s never ran dry", queue, partition, group)
	return nil
}

func push(t *testing.T, base, queue, partition, key string) string {
	t.Helper()
	body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":%q,"transactionId":%q,"payload":{"x":1}}]}`, queue, partition, key)
	resp, err := http.Post(base+"/api/v1/push", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []struct {
		Status string `json:"status"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || len(out) != 1 {
		t.Fatalf("push: %d %s", resp.StatusCode, b)
	}
	return out[0].Status
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TestImportMillion measures the import of one million messages (100 partitions of 10,000,
// one group half-way through each); it runs only with QUEEN_IMPORT_MILLION=1:
//
//	QUEEN_IMPORT_MILLION=1 go test -count=1 -run TestImportMillion -v ./internal/importer
func TestImportMillion(t *testing.T) {
	if os.Getenv("QUEEN_IMPORT_MILLION") == "" {
		t.Skip("set QUEEN_IMPORT_MILLION=1 to import a million messages")
	}
	ctx := context.Background()
	pool := pgtest.RawPool(t, testDSN)
	ddl := strings.ReplaceAll(strings.ReplaceAll(queenDDL, "queen.", "qbig."), "SCHEMA queen;", "SCHEMA qbig;")
	ddl = strings.ReplaceAll(ddl, "queen_streams", "qbig_streams")
	if _, err := pool.Exec(ctx, ddl+`;
		INSERT INTO qbig.queues (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'big');
		INSERT INTO qbig.partitions (id, queue_id, name)
		SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000001', 'p' || i FROM generate_series(1, 100) i;
		INSERT INTO qbig.messages (id, transaction_id, trace_id, partition_id, payload, created_at, producer_sub)
		SELECT gen_random_uuid(), 'k' || i, NULL, p.id, jsonb_build_object('n', i, 'body', repeat('x', 100)),
		       timestamptz '2026-03-01Z' + i * interval '1 ms', 'alice'
		FROM qbig.partitions p, generate_series(1, 10000) i;
		INSERT INTO qbig.partition_consumers (partition_id, consumer_group, last_consumed_id, last_consumed_created_at)
		SELECT m.partition_id, 'g', m.id, m.created_at FROM qbig.messages m WHERE m.transaction_id = 'k5000'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, out, err := runImport(t, "qg_big", func(o *Options) { o.SourceSchema, o.StreamsSchema = "qbig", "qbig_streams" })
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	took := time.Since(start)
	if r.Written["messages"] != 1_000_000 {
		t.Fatalf("wrote %d messages", r.Written["messages"])
	}
	t.Logf("1,000,000 messages in %s: %.0f messages/s\n%s", took.Round(time.Millisecond), 1e6/took.Seconds(), out)
}
