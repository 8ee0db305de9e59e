// Package importer moves a Queen v0.15 installation into queen-go's schema: queues with their
// options, partitions, messages (ids, transactionIds, payloads, trace ids, producer subjects,
// creation times), every consumer group's position and subscription, dead letters, traces and
// stream queries with their state (docs/deploy.md, "Coming from Queen").
//
// It reads Queen's own tables, so its SQL (sql/*.sql) lives here rather than with the store's:
// the store owns queen-go's schema and the statements of the broker; this package only writes
// rows into that schema, once, before a broker serves them. Each queue is imported in one
// target transaction that also records it in queen_import, so a run that dies leaves every
// queue either wholly imported or absent, and the next run resumes after the last one done.
// Bulk rows travel as COPY text streams piped from the source's COPY TO into the target's COPY
// FROM, never through Go values.
package importer

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/store"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlText returns one of the package's statements, with {{name}} tokens replaced.
func sqlText(name string, repl ...string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic(err) // a missing embedded file is a build mistake
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		s = strings.ReplaceAll(s, "{{"+repl[i]+"}}", repl[i+1])
	}
	return s
}

// Options configure one run.
type Options struct {
	// SourceDSN names the Queen database; SourceSchema its schema ("queen" by default) and
	// StreamsSchema the schema of its stream queries ("queen_streams"; absent: no streams).
	SourceDSN, SourceSchema, StreamsSchema string
	// TargetDSN and TargetSchema name queen-go's database and schema (DB_SCHEMA).
	TargetDSN, TargetSchema string
	// Pooler says TargetDSN names a transaction-mode pooler (DATABASE_POOLER=transaction):
	// statements are then sent unprepared, since a prepared statement stays on one server
	// session.
	Pooler bool
	// DryRun reads the source and prints the plan (counts, option mapping) without writing.
	DryRun bool
	// Out receives the plan, the notices and the final table; Progress the progress display
	// (a bar redrawn in place when Terminal, else a line every few seconds). nil: discarded.
	Out, Progress io.Writer
	Terminal      bool

	// hook, in tests, is called after each step ("copied messages", "imported"), with the
	// queue's name; a test's child process stops there to be killed.
	hook func(step, queue string)
}

// ErrRefused wraps the errors of a run refused before anything was written (a queue of the
// same name the import did not make, an unknown source schema, a queue it cannot read).
var ErrRefused = errors.New("import refused")

// Run imports the source into the target (or, with DryRun, only plans it) and returns the
// counts. The target schema is migrated first, as a broker starting on it would.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.SourceSchema == "" {
		o.SourceSchema = "queen"
	}
	if o.StreamsSchema == "" {
		o.StreamsSchema = "queen_streams"
	}
	if o.TargetSchema == "" {
		o.TargetSchema = "queen_go"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	src, err := connectSource(ctx, o)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.Background())
	shape, err := checkSchema(ctx, src, o.SourceSchema, o.StreamsSchema)
	if err != nil {
		return nil, err
	}
	// One snapshot of the source for the whole run: positions, messages and dead letters read
	// at different moments of a live Queen would not agree.
	tx, err := src.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer tx.Rollback(context.Background())
	p, err := readPlan(ctx, tx, o, shape)
	if err != nil {
		return nil, err
	}
	if !o.DryRun {
		if err := migrateTarget(ctx, o); err != nil {
			return nil, err
		}
	}
	tgt, err := connectTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	if err := p.readTarget(ctx, tgt, o.TargetSchema); err != nil {
		return nil, err
	}
	p.printPlan(o.Out, o.DryRun)
	if err := p.refusal(); err != nil {
		return nil, err
	}
	r := &run{o: o, src: tx, tgt: tgt, plan: p, report: newReport(p)}
	if o.DryRun {
		return r.report, nil
	}
	if p.nothingToDo() {
		fmt.Fprintf(o.Out, "Nothing to do: every queue%s of %s was imported by an earlier run; nothing changed.\n",
			map[bool]string{true: " and the stream queries", false: ""}[p.streams != nil], p.sourceName)
		return r.report, nil
	}
	err = r.importAll(ctx)
	r.report.Elapsed = r.elapsed()
	if err != nil {
		return r.report, err
	}
	r.report.Print(o.Out)
	return r.report, nil
}

func connectSource(ctx context.Context, o Options) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(o.SourceDSN)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{o.SourceSchema}.Sanitize()
	cfg.RuntimeParams["application_name"] = "queen import-queen"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	return conn, nil
}

func connectTarget(ctx context.Context, o Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(o.TargetDSN)
	if err != nil {
		return nil, fmt.Errorf("target database: %w", err)
	}
	cfg.MaxConns = 2
	if o.Pooler {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.TargetSchema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = "queen import-queen"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("target database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("target database: %w", err)
	}
	return pool, nil
}

// migrateTarget brings the target schema to this binary's version with the store's own
// migrations, so the rows written match what the broker expects.
func migrateTarget(ctx context.Context, o Options) error {
	st, err := store.Open(ctx, store.Options{DSN: o.TargetDSN, Schema: o.TargetSchema, MaxConns: 2,
		StatementTimeout: 5 * time.Minute, Pooler: o.Pooler})
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	return nil
}
