// Command queen runs the queen-go broker: the Queen MQ HTTP API over PostgreSQL.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/queen-go/queen/internal/admin"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/embeddedpg"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0"

func main() {
	cfg, err := config.Load(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queen:", err)
		os.Exit(2)
	}
	switch {
	case cfg.ShowHelp:
		fmt.Print(config.Usage())
		return
	case cfg.ShowVersion:
		fmt.Println("queen-go", version)
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("queen stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	dsn, embedded := cfg.Database()
	if embedded {
		pg, err := startEmbedded(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer func() {
			if err := pg.Stop(); err != nil {
				log.Warn("stopping embedded PostgreSQL", "err", err)
			}
		}()
		dsn = pg.DSN()
		log.Info("using embedded PostgreSQL", "dataDir", cfg.DataDir)
	} else {
		log.Info("using external PostgreSQL")
	}

	st, err := store.Open(ctx, store.Options{DSN: dsn, Schema: cfg.DBSchema, MaxConns: int32(cfg.DBPoolSize),
		ConnectTimeout: cfg.DBConnectionTimeout, IdleTimeout: cfg.DBIdleTimeout,
		StatementTimeout: cfg.DBStatementTimeout, LockTimeout: cfg.DBLockTimeout})
	if err != nil {
		return err
	}
	defer st.Close()
	bg, cancelBG := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBG()
	// A database that is down at startup is not fatal: routes answer 503 and the schema is
	// applied once it appears (operations.md §8). A migration error is.
	if err := migrateWhenReachable(ctx, st, log); err != nil {
		return err
	}

	var key *encryption.Key
	if cfg.EncryptionKey != "" {
		if key, err = encryption.ParseKey(cfg.EncryptionKey); err != nil {
			return err
		}
	}
	hub := waiter.NewHub()
	rec, jobs := background(cfg, st, hub, log)
	b := broker.New(st, hub, broker.Config{DefaultSubscriptionMode: cfg.DefaultSubscriptionMode,
		PollInitial: cfg.PopWaitInitialInterval, PollMax: cfg.PopWaitMaxInterval, EncryptionKey: key,
		Recorder: rec, PushCalls: cfg.PushConcurrency}, log)
	if key == nil {
		b.WarnPlaintextQueues(ctx)
	}
	go b.Listen(bg)

	apiCfg := httpapi.Config{DefaultBatch: cfg.DefaultBatchSize, DefaultTimeout: cfg.DefaultTimeout,
		WorkerID: cfg.WorkerID, Version: version, Metrics: rec, Jobs: jobs}
	if cfg.JWTEnabled {
		// A key source that cannot be used stops the broker here (operations.md §6.1).
		if apiCfg.Auth, err = auth.New(auth.FromConfig(cfg)); err != nil {
			return err
		}
		log.Info("authentication enabled", "algorithm", cfg.JWTAlgorithm)
	}
	api := httpapi.New(b, admin.New(st, b, key, log), apiCfg, log)
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	srv := &http.Server{Addr: addr, Handler: api, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Info("queen-go listening", "addr", ln.Addr().String(), "version", version, "schema", cfg.DBSchema)
	servePprof(cfg.PprofAddr, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	stopBackground := startBackground(bg, rec, jobs)
	defer stopBackground()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	hub.Close() // parked pops answer 204 now
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("in-flight requests did not finish in time", "err", err)
	}
	return nil
}

func startEmbedded(ctx context.Context, cfg config.Config, log *slog.Logger) (*embeddedpg.Server, error) {
	if _, err := embeddedpg.FindBinaries(cfg.PGBinDir); err != nil {
		if ierr := embeddedpg.EnsureInstalled(log); ierr != nil {
			return nil, ierr
		}
	}
	return embeddedpg.Start(ctx, embeddedpg.Options{DataDir: cfg.DataDir, BinDir: cfg.PGBinDir, Logger: log})
}

// migrateWhenReachable applies the schema now when the database answers, otherwise in the
// background as soon as it does.
func migrateWhenReachable(ctx context.Context, st *store.Store, log *slog.Logger) error {
	err := st.Migrate(ctx)
	if err == nil || !errors.Is(err, mq.ErrUnavailable) {
		return err
	}
	log.Warn("database unreachable at startup; serving and retrying the migration", "err", err)
	go func() {
		for ctx.Err() == nil {
			time.Sleep(time.Second)
			if err := st.Migrate(ctx); err == nil {
				log.Info("database reachable; schema applied")
				return
			} else if !errors.Is(err, mq.ErrUnavailable) {
				log.Error("migration failed", "err", err)
				return
			}
		}
	}()
	return nil
}
