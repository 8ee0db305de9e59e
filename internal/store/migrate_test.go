package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgtest"
)

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

func openSchema(t testing.TB, schema string) *Store {
	t.Helper()
	// Generous deadlines: the suite shares the machine with other packages, and calls such as
	// a pop over 10,000 partitions are slow on a loaded one; the deadline tests set their own.
	s, err := Open(context.Background(), Options{DSN: testDSN, Schema: schema, MaxConns: 4,
		ConnectTimeout: 15 * time.Second, RequestTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// migratedSchema is openSchema on a new schema, migrated. (A schema of an earlier run of the
// test, under -count, is dropped first.)
func migratedSchema(t testing.TB, schema string) *Store {
	t.Helper()
	dropSchema(t, schema)
	s := openSchema(t, schema)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func dropSchema(t testing.TB, schema string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+quoteIdent(schema)+" CASCADE"); err != nil {
		t.Fatal(err)
	}
}

// Brokers starting together apply each migration once and all come up.
func TestMigrateConcurrentStartsApplyOnce(t *testing.T) {
	const brokers = 6
	dropSchema(t, "concurrent_start")
	var wg sync.WaitGroup
	errs := make([]error, brokers)
	for i := range brokers {
		s := openSchema(t, "concurrent_start")
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Migrate(context.Background())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("broker %d: %v", i, err)
		}
	}
	ms, err := listMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var rows, latest int
	conn, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(),
		"SELECT count(*), max(version) FROM concurrent_start.schema_migrations").Scan(&rows, &latest); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || latest != ms[len(ms)-1].version {
		t.Fatalf("%d migration rows up to %d, want %d up to %d", rows, latest, len(ms), ms[len(ms)-1].version)
	}
}

// A database migrated by a newer binary stops an older one instead of being misused.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	s := migratedSchema(t, "newer_schema")
	conn, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "INSERT INTO newer_schema.schema_migrations (version) VALUES (9999)"); err != nil {
		t.Fatal(err)
	}
	err = s.Migrate(context.Background())
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("err %v, want a refusal naming the newer version", err)
	}
}

// Functions are re-installed only when their text changes: a second start leaves them alone.
func TestMigrateKeepsUnchangedFunctions(t *testing.T) {
	s := openSchema(t, "stable_functions")
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	oid := func() string {
		var v string
		err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
			return c.QueryRow(ctx, "SELECT 'qg_pop'::regproc::oid::text").Scan(&v)
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := oid()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := oid(); after != before {
		t.Fatalf("qg_pop re-created on an unchanged start: oid %s -> %s", before, after)
	}
}

// migration1RowTypes are the row types as migration 0001 created them until they moved to the
// function files: what a database migrated by an earlier release holds.
const migration1RowTypes = `
CREATE TYPE qg_push_plan AS (i integer, status text, mid uuid, pid uuid, pos bigint, qid uuid, qname text, pname text);
CREATE TYPE qg_popped AS (id uuid, transaction_id text, trace_id uuid, payload text, producer_sub text,
    created_at timestamptz, partition_id uuid, partition_name text, queue_name text, retry_count integer, encrypted boolean);
CREATE TYPE qg_ack_result AS (i integer, success boolean, error text, queue_name text, partition_name text,
    lease_released boolean, dlq boolean, already_committed boolean);
CREATE TYPE qg_txn_result AS (i integer, kind text, status text, message_id uuid, partition_id uuid, queue_name text,
    dlq boolean, already_committed boolean, lease_released boolean);`

// The row types of the hot-path functions are defined in the function files and installed with
// them. A database migrated by an earlier release (types from migration 0001, its functions
// using them) ends up exactly like a new one and works; so does a later re-install, when the
// types already exist.
func TestMigrateInstallsRowTypesWithTheFunctions(t *testing.T) {
	ctx := context.Background()
	fresh := migratedSchema(t, "row_types_fresh")
	want := catalogOf(t, fresh)
	for _, typ := range []string{"qg_ack_result", "qg_popped", "qg_push_plan", "qg_txn_result"} {
		if !strings.Contains(want, "type "+typ+" (") {
			t.Fatalf("row type %s missing after a new install:\n%s", typ, want)
		}
	}

	// The earlier release's state: its functions (stand-ins here) return the types migration
	// 0001 made, under another function hash.
	old := migratedSchema(t, "row_types_upgraded")
	err := old.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, dropFunctions+";"+migration1RowTypes+`;
				CREATE FUNCTION qg_push() RETURNS SETOF qg_push_plan LANGUAGE sql AS 'SELECT NULL::qg_push_plan WHERE false';
				CREATE FUNCTION qg_pop() RETURNS SETOF qg_popped LANGUAGE sql AS 'SELECT NULL::qg_popped WHERE false';
				CREATE FUNCTION qg_ack_items() RETURNS SETOF qg_ack_result LANGUAGE sql AS 'SELECT NULL::qg_ack_result WHERE false';
				CREATE FUNCTION qg_transaction() RETURNS SETOF qg_txn_result LANGUAGE sql AS 'SELECT NULL::qg_txn_result WHERE false';
				UPDATE function_versions SET hash = 'earlier release'`)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Migrate(ctx); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if got := catalogOf(t, old); got != want {
		t.Fatalf("upgraded schema differs from a new one:\n%s\nwant:\n%s", got, want)
	}
	exerciseRowTypes(t, old)

	// A later change of any function file re-installs them all, the row types included.
	if _, err := fresh.pool.Exec(ctx, "UPDATE function_versions SET hash = 'changed'"); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Migrate(ctx); err != nil {
		t.Fatalf("re-install: %v", err)
	}
	if got := catalogOf(t, fresh); got != want {
		t.Fatalf("re-installed schema differs:\n%s\nwant:\n%s", got, want)
	}
	exerciseRowTypes(t, fresh)
}

// catalogOf lists the standalone composite types of the store's schema with their attributes,
// each marked with whether a function returns it, and the functions with their signatures.
func catalogOf(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	err := s.pool.QueryRow(context.Background(), `
		SELECT coalesce((SELECT string_agg(format('type %s (%s) returned=%s', ty.typname,
		            (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
		             FROM pg_attribute a WHERE a.attrelid = ty.typrelid AND a.attnum > 0 AND NOT a.attisdropped),
		            EXISTS (SELECT 1 FROM pg_proc p WHERE p.prorettype = ty.oid)), E'\n' ORDER BY ty.typname)
		         FROM pg_type ty JOIN pg_class c ON c.oid = ty.typrelid
		         WHERE ty.typnamespace = current_schema()::regnamespace AND ty.typtype = 'c' AND c.relkind = 'c'), '')
		    || E'\n' ||
		       (SELECT string_agg(format('function %s(%s) %s', p.proname, pg_get_function_identity_arguments(p.oid),
		                                 pg_get_function_result(p.oid)), E'\n'
		                          ORDER BY p.proname, pg_get_function_identity_arguments(p.oid))
		        FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace)`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exerciseRowTypes runs the functions that return the row types: a push, a pop, an ack and a
// transaction.
func exerciseRowTypes(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	const group = "__QUEUE_MODE__"
	pushed, err := s.Push(ctx, []PushRow{
		{Queue: "types", Partition: "Default", Key: "k1", ID: uuid.NewString(), Payload: []byte(`1`)},
		{Queue: "types", Partition: "Default", Key: "k2", ID: uuid.NewString(), Payload: []byte(`2`)},
	})
	if err != nil || len(pushed) != 2 || pushed[1].Status != mq.StatusQueued {
		t.Fatalf("push: %v %+v", err, pushed)
	}
	lease := uuid.NewString()
	msgs, err := s.Pop(ctx, PopRequest{Queue: "types", Group: group, Batch: 2, Partitions: 1, LeaseID: lease, SubscriptionMode: "all"})
	if err != nil || len(msgs) != 2 || msgs[1].TransactionID != "k2" {
		t.Fatalf("pop: %v %+v", err, msgs)
	}
	acked, err := s.Ack(ctx, []mq.AckItem{{PartitionID: msgs[0].PartitionID, TransactionID: "k1", Group: group, Status: "completed", LeaseID: lease}})
	if err != nil || len(acked) != 1 || !acked[0].Success {
		t.Fatalf("ack: %v %+v", err, acked)
	}
	res, err := s.Transaction(ctx,
		[]TxnPush{{Index: 0, Item: PushRow{Queue: "types-out", Partition: "Default", Key: "t1", ID: uuid.NewString(), Payload: []byte(`3`)}}},
		[]TxnAck{{Index: 1, Ack: mq.AckItem{PartitionID: msgs[1].PartitionID, TransactionID: "k2", Group: group, Status: "completed", LeaseID: lease}}},
		nil, nil, "")
	if err != nil || len(res) != 2 || res[0].Kind != "push" || res[1].Kind != "ack" || res[1].Queue != "types" {
		t.Fatalf("transaction: %v %+v", err, res)
	}
}
