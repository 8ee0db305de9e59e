package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/queen-go/queen/internal/budget"
)

//go:embed sql/migrations/*.sql sql/functions/*.sql
var sqlFiles embed.FS

// migrationLockKey is the advisory lock that serialises schema work of brokers starting at once.
const migrationLockKey = 0x7175_6565_6e67_6f // "queengo"

// migrationDeadlineFactor times DB_STATEMENT_TIMEOUT bounds a whole migration on the broker's
// clock (5 minutes with the defaults): it runs dozens of statements, each of which may take
// up to statement_timeout.
const migrationDeadlineFactor = 10

// Migrate creates the schema, applies pending migrations in order and (re)installs the
// functions when their text changed, all under an advisory lock so that instances starting
// together apply each step once. A database newer than this binary is an error.
func (s *Store) Migrate(ctx context.Context) error {
	// Applying the schema runs many statements (and may wait for another instance's
	// migration), each bounded by statement_timeout on the server; the broker's own deadline
	// on all of them only has to keep a frozen server from holding start-up forever.
	ctx = budget.WorkFor(ctx, migrationDeadlineFactor*s.bulkTimeout)
	// The lock is transaction-scoped: it works the same through a transaction pooler, where a
	// session lock would stay behind on whichever server session took it.
	return s.inTx(ctx, func(ctx context.Context, tx querier) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		return s.migrate(ctx, tx)
	})
}

func (s *Store) migrate(ctx context.Context, tx querier) error {
	schema := quoteIdent(s.schema)
	stmts := []string{
		"CREATE SCHEMA IF NOT EXISTS " + schema,
		"SET LOCAL search_path TO " + schema,
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare schema: %w", err)
		}
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	migrations, err := listMigrations()
	if err != nil {
		return err
	}
	latest := 0
	if len(migrations) > 0 {
		latest = migrations[len(migrations)-1].version
	}
	if current > latest {
		return fmt.Errorf("database schema %q is at version %d, newer than this binary knows (%d): upgrade queen-go", s.schema, current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.version); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
	}
	return installFunctions(ctx, tx)
}

type migration struct {
	version int
	name    string
	sql     string
}

func listMigrations() ([]migration, error) {
	names, err := fs.Glob(sqlFiles, "sql/migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its version number", base)
		}
		b, err := sqlFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// installFunctions re-creates the PL/pgSQL functions and the row types their files define
// when their combined text changed, so a running fleet is not disturbed by every restart.
func installFunctions(ctx context.Context, tx querier) error {
	names, err := fs.Glob(sqlFiles, "sql/functions/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	h := sha256.New()
	var bodies []string
	for _, n := range names {
		b, err := sqlFiles.ReadFile(n)
		if err != nil {
			return err
		}
		h.Write(b)
		bodies = append(bodies, string(b))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	var installed string
	err = tx.QueryRow(ctx, "SELECT hash FROM function_versions WHERE id = 1").Scan(&installed)
	if err != nil && !isNoRows(err) {
		return fmt.Errorf("read function version: %w", err)
	}
	if installed == sum {
		return nil
	}
	// Drop every function of ours first, so a changed signature leaves no stale overload, and
	// the row types they return, which their files define again.
	if _, err := tx.Exec(ctx, dropFunctions); err != nil {
		return fmt.Errorf("drop old functions: %w", err)
	}
	for i, b := range bodies {
		if _, err := tx.Exec(ctx, b); err != nil {
			return fmt.Errorf("install %s: %w", path.Base(names[i]), err)
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO function_versions (id, hash) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash`, sum)
	return err
}

// dropFunctions removes our functions, then our row types: the standalone composite types
// named qg_* (a table's row type is never one), newest first in case one holds another. They
// are created by the function files, so a changed definition is installed like a changed
// function, and a database whose types came from migration 0001 (before they moved to the
// function files) ends up the same as a new one. No CASCADE: should anything besides our
// functions use such a type, the install fails rather than drop it along.
const dropFunctions = `DO $$
DECLARE
    f regprocedure;
    t regtype;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'qg\_%'
    LOOP
        EXECUTE 'DROP FUNCTION ' || f;
    END LOOP;
    FOR t IN SELECT ty.oid::regtype FROM pg_type ty JOIN pg_class c ON c.oid = ty.typrelid
             WHERE ty.typnamespace = current_schema()::regnamespace AND ty.typtype = 'c'
               AND c.relkind = 'c' AND ty.typname LIKE 'qg\_%'
             ORDER BY ty.oid DESC
    LOOP
        EXECUTE 'DROP TYPE ' || t;
    END LOOP;
END $$`
