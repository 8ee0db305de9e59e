package store

// A pool of migrated schemas for the conformance suite (the pattern of River's
// riverdbtest). Migrating a schema costs 0.5–1.3 s, the test that uses it often a few
// milliseconds, so setup hands out a schema that an earlier test used and that was reset when
// that test ended, and migrates a new one only when every pooled schema is in use (so the pool
// grows to the number of tests running at once, go test -parallel, and no further).
//
// A reset gives exactly the state a fresh migration gives: every table is truncated (RESTART
// IDENTITY), the rows the migrations seed are copied back from a copy taken right after the
// schema was migrated (in a side schema <name>_seed), every sequence gets the value it had then,
// and the tables' planner statistics and activity counters are cleared. A test that changed
// the schema's definitions (a function replaced, an index dropped, a table altered) is caught by
// comparing a fingerprint of the catalog with the one taken after migration: such a schema is
// dropped, not reused. TestRecycledSchemaEqualsFresh proves the reset against a fresh migration.
//
// Tests that exercise migration itself (migrate_test.go) and those that name their schema keep
// migratedSchema, a fresh schema each time.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

// pooled is one migrated schema of the pool and what a reset restores.
type pooled struct {
	name    string
	tables  []string        // every table of the schema
	seeded  []string        // the tables the migrations left rows in (copied to name_seed)
	seqs    []sequenceValue // every sequence, as migrated
	catalog string          // catalogFingerprint after migration
}

// sequenceValue is a sequence's state: setval(name, last, called) restores it.
type sequenceValue struct {
	name   string
	last   int64
	called bool
}

// schemaPool holds the schemas no test is using, most recently released last.
type schemaPool struct {
	mu   sync.Mutex
	free []*pooled
	made int
}

var testSchemas schemaPool

// schemaOfTest maps a test's name to the schema pooledSchema gave it.
var schemaOfTest sync.Map

// testSchema is the schema setup gave the running test, for a test that opens connections of
// its own on it.
func testSchema(t testing.TB) string {
	t.Helper()
	name, ok := schemaOfTest.Load(t.Name())
	if !ok {
		t.Fatal("testSchema: the test has no pooled schema (call setup first)")
	}
	return name.(string)
}

// pooledSchema returns a store on a migrated schema no other test is using, in the state of a
// fresh migration; the schema goes back to the pool, reset, when the test ends.
func pooledSchema(t testing.TB) *Store {
	t.Helper()
	p, fresh := testSchemas.take()
	schemaOfTest.Store(t.Name(), p.name)
	// Registered before openSchema's Close, so it runs after it (cleanups run last first): the
	// store's connections are gone when the schema is reset.
	t.Cleanup(func() {
		schemaOfTest.Delete(t.Name())
		testSchemas.give(t, p)
	})
	if !fresh {
		return openSchema(t, p.name)
	}
	s := migratedSchema(t, p.name)
	if err := p.capture(context.Background()); err != nil {
		p.tables = nil // not reusable: give drops it
		t.Fatalf("schema pool: capture %s: %v", p.name, err)
	}
	return s
}

// take hands out a free schema, or names a new one (fresh) for the caller to migrate.
func (sp *schemaPool) take() (p *pooled, fresh bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if n := len(sp.free); n > 0 {
		p = sp.free[n-1]
		sp.free = sp.free[:n-1]
		return p, false
	}
	sp.made++
	return &pooled{name: fmt.Sprintf("pool_%03d", sp.made)}, true
}

// give resets p and puts it back; a schema that cannot be reset to the migrated state is
// dropped instead (the next test migrates a new one).
func (sp *schemaPool) give(t testing.TB, p *pooled) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := errNotCaptured
	if p.tables != nil {
		err = p.reset(ctx)
	}
	if err != nil {
		if err != errNotCaptured && !t.Failed() {
			t.Logf("schema pool: %s not reused: %v", p.name, err)
		}
		if derr := adminExecSQL(ctx, "DROP SCHEMA IF EXISTS "+quoteIdent(p.name)+" CASCADE; DROP SCHEMA IF EXISTS "+
			quoteIdent(p.name+"_seed")+" CASCADE"); derr != nil {
			t.Logf("schema pool: drop %s: %v", p.name, derr)
		}
		return
	}
	sp.mu.Lock()
	sp.free = append(sp.free, p)
	sp.mu.Unlock()
}

// errNotCaptured marks a schema whose migration or capture failed: it is dropped silently.
var errNotCaptured = errors.New("never captured")

// schemaConnect opens a connection of its own on schema.
func schemaConnect(ctx context.Context, schema string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = quoteIdent(schema)
	return pgx.ConnectConfig(ctx, cfg)
}

func adminExecSQL(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// capture records what a reset restores, right after the migration: the tables, a copy of the
// seeded ones, the sequences and the catalog's fingerprint.
func (p *pooled) capture(ctx context.Context) error {
	conn, err := schemaConnect(ctx, p.name)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tables, err := schemaTables(ctx, conn, p.name)
	if err != nil {
		return err
	}
	seed := quoteIdent(p.name + "_seed")
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+seed+" CASCADE; CREATE SCHEMA "+seed); err != nil {
		return err
	}
	var seeded []string
	for _, tb := range tables {
		var has bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+quoteIdent(tb)+")").Scan(&has); err != nil {
			return err
		}
		if !has {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE "+seed+"."+quoteIdent(tb)+" AS SELECT * FROM "+quoteIdent(tb)); err != nil {
			return err
		}
		seeded = append(seeded, tb)
	}
	seqs, err := schemaSequences(ctx, conn, p.name)
	if err != nil {
		return err
	}
	fp, err := catalogFingerprint(ctx, conn, p.name)
	if err != nil {
		return err
	}
	p.tables, p.seeded, p.seqs, p.catalog = tables, seeded, seqs, fp
	return nil
}

// reset brings the schema back to the state capture recorded, in one transaction.
func (p *pooled) reset(ctx context.Context) error {
	conn, err := schemaConnect(ctx, p.name)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if fp, err := catalogFingerprint(ctx, conn, p.name); err != nil {
		return err
	} else if fp != p.catalog {
		return fmt.Errorf("the test changed the schema's definitions")
	}
	if tables, err := schemaTables(ctx, conn, p.name); err != nil {
		return err
	} else if strings.Join(tables, ",") != strings.Join(p.tables, ",") {
		return fmt.Errorf("tables %v, want %v", tables, p.tables)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// A connection the test leaked would block the TRUNCATE: give up on the schema instead.
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return err
	}
	quoted := make([]string, len(p.tables))
	for i, tb := range p.tables {
		quoted[i] = quoteIdent(tb)
	}
	if _, err := tx.Exec(ctx, "TRUNCATE "+strings.Join(quoted, ", ")+" RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	for _, tb := range p.seeded {
		// Generated columns cannot be written; identity columns keep their seeded values.
		var cols string
		err := tx.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
			WHERE attrelid = (quote_ident($1::text) || '.' || quote_ident($2::text))::regclass AND attnum > 0
			  AND NOT attisdropped AND attgenerated = ''`, p.name, tb).Scan(&cols)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+quoteIdent(tb)+" ("+cols+") OVERRIDING SYSTEM VALUE SELECT "+cols+
			" FROM "+quoteIdent(p.name+"_seed")+"."+quoteIdent(tb)); err != nil {
			return fmt.Errorf("restore %s: %w", tb, err)
		}
	}
	for _, sq := range p.seqs {
		if _, err := tx.Exec(ctx, "SELECT setval($1::text::regclass, $2, $3)", quoteIdent(p.name)+"."+quoteIdent(sq.name), sq.last, sq.called); err != nil {
			return fmt.Errorf("sequence %s: %w", sq.name, err)
		}
	}
	// What ANALYZE and the activity counters learnt from the test's rows: a fresh schema has
	// neither (the plan tests read plans; deleting from pg_statistic needs a superuser, which
	// the test server's user is; elsewhere the statistics merely stay).
	if _, err := tx.Exec(ctx, "SAVEPOINT stats"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM pg_statistic WHERE starelid IN
		(SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1)`,
		p.name); err != nil {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT stats"); rerr != nil {
			return rerr
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_stat_reset_single_table_counters(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'i', 'p')`, p.name); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// schemaTables lists the ordinary tables of schema by name.
func schemaTables(ctx context.Context, conn *pgx.Conn, schema string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`, schema)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// schemaSequences reads every sequence of schema; a sequence never used restarts at its start
// (setval(start, false)).
func schemaSequences(ctx context.Context, conn *pgx.Conn, schema string) ([]sequenceValue, error) {
	rows, err := conn.Query(ctx, `SELECT sequencename::text, coalesce(last_value, start_value), last_value IS NOT NULL
		FROM pg_sequences WHERE schemaname = $1 ORDER BY sequencename`, schema)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sequenceValue, error) {
		var v sequenceValue
		err := r.Scan(&v.name, &v.last, &v.called)
		return v, err
	})
}

// catalogFingerprint hashes the definitions of everything in schema (relations and their
// columns, options, indexes, constraints, triggers, functions, types, views) with the schema's
// own name taken out, so two schemas migrated alike have the same fingerprint.
func catalogFingerprint(ctx context.Context, conn *pgx.Conn, schema string) (string, error) {
	var fp string
	err := conn.QueryRow(ctx, `
		WITH ns AS (SELECT n.oid, quote_ident(n.nspname) || '.' AS prefix FROM pg_namespace n WHERE n.nspname = $1),
		defs AS (
			SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || c.relpersistence::text || ' ' || coalesce(c.reloptions::text, '') AS d
			FROM pg_class c, ns WHERE c.relnamespace = ns.oid
			UNION ALL
			SELECT 'col ' || c.relname::text || '.' || a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' ||
			       a.attnotnull || ' ' || a.attgenerated::text || a.attidentity::text || ' ' ||
			       coalesce(replace(pg_get_expr(ad.adbin, ad.adrelid), ns.prefix, ''), '')
			FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum, ns
			WHERE c.relnamespace = ns.oid
			UNION ALL
			SELECT 'idx ' || replace(pg_get_indexdef(i.indexrelid), ns.prefix, '')
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, ns WHERE c.relnamespace = ns.oid
			UNION ALL
			SELECT 'con ' || co.conname || ' ' || replace(pg_get_constraintdef(co.oid), ns.prefix, '')
			FROM pg_constraint co, ns WHERE co.connamespace = ns.oid
			UNION ALL
			SELECT 'trg ' || replace(pg_get_triggerdef(tg.oid), ns.prefix, '')
			FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid, ns WHERE c.relnamespace = ns.oid AND NOT tg.tgisinternal
			UNION ALL
			SELECT 'fn ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' ||
			       md5(replace(p.prosrc, ns.prefix, '')) || ' ' || coalesce(p.proconfig::text, '')
			FROM pg_proc p, ns WHERE p.pronamespace = ns.oid
			UNION ALL
			SELECT 'typ ' || t.typname || ' ' || t.typtype::text FROM pg_type t, ns WHERE t.typnamespace = ns.oid
			UNION ALL
			SELECT 'view ' || c.relname || ' ' || md5(replace(pg_get_viewdef(c.oid), ns.prefix, ''))
			FROM pg_class c, ns WHERE c.relnamespace = ns.oid AND c.relkind IN ('v', 'm')
		)
		SELECT md5(string_agg(d, E'\n' ORDER BY d)) FROM defs`, schema).Scan(&fp)
	return fp, err
}

// schemaState is what a test can observe of a schema's contents: per table its row count and a
// hash of its rows without their time columns (a fresh migration stamps those with its own
// clock), each sequence's value, and the catalog's fingerprint.
func schemaState(t *testing.T, schema string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := schemaConnect(ctx, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables, err := schemaTables(ctx, conn, schema)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tb := range tables {
		var cols *string
		if err := conn.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
			WHERE attrelid = (quote_ident($1::text) || '.' || quote_ident($2::text))::regclass AND attnum > 0
			  AND NOT attisdropped AND format_type(atttypid, NULL) NOT LIKE 'timestamp%'`, schema, tb).Scan(&cols); err != nil {
			t.Fatal(err)
		}
		sel := "count(*)::text"
		if cols != nil {
			sel += " || ' ' || md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), ''))"
		}
		from := "(SELECT " + deref(cols) + " FROM " + quoteIdent(tb) + ") r"
		if cols == nil {
			from = quoteIdent(tb)
		}
		var v string
		if err := conn.QueryRow(ctx, "SELECT "+sel+" FROM "+from).Scan(&v); err != nil {
			t.Fatalf("%s: %v", tb, err)
		}
		out["table "+tb] = v
	}
	seqs, err := schemaSequences(ctx, conn, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, sq := range seqs {
		out["sequence "+sq.name] = fmt.Sprint(sq.last, sq.called)
	}
	fp, err := catalogFingerprint(ctx, conn, schema)
	if err != nil {
		t.Fatal(err)
	}
	out["catalog"] = fp
	return out
}

// A schema a test has used and the pool has reset is indistinguishable from a fresh migration:
// same rows in every table (the seeded ones included), same sequence values, same definitions.
// Not parallel: the second subtest must get the schema the first one released.
func TestRecycledSchemaEqualsFresh(t *testing.T) {
	var used string
	t.Run("dirty", func(t *testing.T) {
		b := setup(t)
		used = b.s.Schema()
		b.configure("q", func(o *mq.QueueOptions) { o.MaxSize = 50 })
		b.pushKeys("p1", "a", "b")
		p := b.mustPop(PopRequest{Batch: 2}, "a", "b")
		b.mustAck(ackOf(p, 0, mq.AckCompleted))
		b.mustAck(ackOf(p, 1, mq.AckFailed))
		if _, err := b.s.SetMaintenanceMode(b.ctx, mq.PopMaintenance, true, nil, "w1"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.StreamRegister(b.ctx, "", mq.StreamRegistration{Name: "s", SourceQueue: "q", ConfigHash: "h"}, uuid.NewString()); err != nil {
			t.Fatal(err)
		}
		// Every sequence moves, and every table gets a row where a plain insert can make one.
		b.exec(`DO $$ DECLARE r record; BEGIN
			FOR r IN SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema() LOOP
				PERFORM nextval(quote_ident(r.sequencename));
			END LOOP; END $$`)
		b.exec(`UPDATE function_versions SET hash = 'changed'`)
	})
	fresh := migratedSchema(t, "pool_fresh_reference")
	want := schemaState(t, fresh.Schema())
	t.Run("recycled", func(t *testing.T) {
		b := setup(t)
		if b.s.Schema() != used {
			t.Fatalf("got schema %s, want the recycled %s", b.s.Schema(), used)
		}
		got := schemaState(t, used)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: recycled %q, fresh %q", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: in the recycled schema only", k)
			}
		}
		if t.Failed() {
			return
		}
		// And it works as a fresh one does.
		b.pushKeys("p1", "a")
		b.mustPop(PopRequest{}, "a")
	})
}

// A test that changes the schema's definitions does not hand the change on: the pool drops the
// schema and the next test gets another.
func TestPoolDropsASchemaWhoseDefinitionsChanged(t *testing.T) {
	var used string
	t.Run("alter", func(t *testing.T) {
		b := setup(t)
		used = b.s.Schema()
		b.exec(`CREATE INDEX pool_extra ON queue_rows (namespace)`)
	})
	t.Run("next", func(t *testing.T) {
		b := setup(t)
		if b.s.Schema() == used {
			t.Fatalf("got the altered schema %s again", used)
		}
		if n := b.texts(`SELECT indexname::text FROM pg_indexes WHERE indexname = 'pool_extra'`); len(n) != 0 {
			t.Fatalf("index still there: %v", n)
		}
	})
}
