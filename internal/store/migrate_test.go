package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/pgtest"
)

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

func openSchema(t *testing.T, schema string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{DSN: testDSN, Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// migratedSchema is openSchema on a new schema, migrated. (A schema of an earlier run of the
// test, under -count, is dropped first.)
func migratedSchema(t *testing.T, schema string) *Store {
	t.Helper()
	dropSchema(t, schema)
	s := openSchema(t, schema)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func dropSchema(t *testing.T, schema string) {
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
		err := s.withConn(ctx, func(c *pgxpool.Conn) error {
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
