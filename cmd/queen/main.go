// Command queen runs the queen-go broker: the Queen MQ HTTP API over PostgreSQL.
//
// It is a thin shell: it reads the configuration, starts an embedded PostgreSQL when no
// database is configured, and runs the instance internal/app builds until SIGINT or SIGTERM.
// `queen import-queen` instead copies a Queen database into the configured one
// (internal/importer).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/embeddedpg"
	buildversion "github.com/queen-go/queen/internal/version"
)

// version is set at build time with -ldflags "-X main.version=…" (make build, make release).
// Left empty, the version comes from the Go build information (internal/version).
var version string

func main() {
	if len(os.Args) > 1 && os.Args[1] == "import-queen" {
		os.Exit(importQueen(os.Args[2:]))
	}
	cfg, err := config.Load(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queen:", err)
		os.Exit(2)
	}
	v := buildversion.String(version)
	switch {
	case cfg.ShowHelp:
		fmt.Print(config.Usage())
		return
	case cfg.ShowVersion:
		fmt.Println("queen-go", buildversion.Describe(version))
		return
	}
	log := app.NewLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log, v); err != nil {
		log.Error("queen stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. The embedded PostgreSQL is this process's concern, not the
// App's: it may install packages and owns a data directory, it must outlive the App's
// shutdown, and no test server ever wants one; the App only needs its connection string.
func run(ctx context.Context, cfg config.Config, log *slog.Logger, v string) error {
	opts := []app.Option{app.WithLogger(log), app.WithVersion(v)}
	if _, embedded := cfg.Database(); embedded {
		dsn, stopPG, err := startEmbedded(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer stopPG()
		cfg.DatabaseURL = dsn
		opts = append(opts, app.WithEmbedded(cfg.DataDir))
		log.Info("using embedded PostgreSQL", "dataDir", cfg.DataDir)
	} else {
		log.Info("using external PostgreSQL")
	}
	a, err := app.New(ctx, cfg, opts...)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// startEmbedded starts the embedded PostgreSQL (installing it first when no binaries are
// found) and returns its connection string and the stop to defer, which logs a failure to stop.
func startEmbedded(ctx context.Context, cfg config.Config, log *slog.Logger) (dsn string, stop func(), err error) {
	if _, err := embeddedpg.FindBinaries(cfg.PGBinDir); err != nil {
		if ierr := embeddedpg.EnsureInstalled(log); ierr != nil {
			return "", nil, ierr
		}
	}
	pg, err := embeddedpg.Start(ctx, embeddedpg.Options{DataDir: cfg.DataDir, BinDir: cfg.PGBinDir, Logger: log})
	if err != nil {
		return "", nil, err
	}
	return pg.DSN(), func() {
		if err := pg.Stop(); err != nil {
			log.Warn("stopping embedded PostgreSQL", "err", err)
		}
	}, nil
}
