package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/importer"
)

const importUsage = `Usage: queen import-queen --from SOURCE_URL [--schema queen] [--dry-run]

Copies a Queen v0.15 database (queues and their options, partitions, messages, every consumer
group's position and subscription, dead letters, traces, stream queries) into the database this
broker is configured with (DATABASE_URL, PG_*, or the embedded PostgreSQL; DB_SCHEMA), migrating
it first. Stop Queen, or put it in push maintenance, before the import (docs/deploy.md, "Coming
from Queen"). A second run resumes after the last queue imported, or says there is nothing left.

Flags:
  --from URL     the Queen database (a PostgreSQL URL or key/value string)
  --schema NAME  Queen's schema in it (default queen; stream queries are read from queen_streams)
  --dry-run      print the counts and the option mapping, write nothing
  --help         print this help
`

// importQueen runs the import-queen subcommand and returns the exit status: 0 done, 1 failed,
// 2 a usage or configuration error, 3 refused before anything was written.
func importQueen(args []string) int {
	fs := flag.NewFlagSet("import-queen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "")
	schema := fs.String("schema", "queen", "")
	dryRun := fs.Bool("dry-run", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(importUsage)
			return 0
		}
		fmt.Fprintln(os.Stderr, "queen import-queen:", err)
		return 2
	}
	if fs.NArg() > 0 || *from == "" {
		fmt.Fprint(os.Stderr, "queen import-queen: --from is required\n\n"+importUsage)
		return 2
	}
	cfg, err := config.Load(nil, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queen import-queen:", err)
		return 2
	}
	log := app.NewLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runImport(ctx, cfg, log, *from, *schema, *dryRun); err != nil {
		fmt.Fprintln(os.Stderr, "queen import-queen:", err)
		if errors.Is(err, importer.ErrRefused) {
			return 3
		}
		return 1
	}
	return 0
}

func runImport(ctx context.Context, cfg config.Config, log *slog.Logger, from, schema string, dryRun bool) error {
	target, embedded := cfg.Database()
	if embedded {
		dsn, stopPG, err := startEmbedded(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer stopPG()
		target = dsn
	}
	pooler := cfg.DatabasePooler == "transaction"
	if pooler && cfg.DatabaseSessionURL != "" {
		// COPY and the import's transactions work through a pooler, but a direct session is
		// one hop shorter for the bulk of the rows.
		target, pooler = cfg.DatabaseSessionURL, false
	}
	fi, err := os.Stderr.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	_, err = importer.Run(ctx, importer.Options{SourceDSN: from, SourceSchema: schema,
		TargetDSN: target, TargetSchema: cfg.DBSchema, Pooler: pooler, DryRun: dryRun,
		Out: os.Stdout, Progress: os.Stderr, Terminal: terminal})
	return err
}
