// Package app is queen-go's one composition root. New builds every part of a broker instance
// from a config.Config — store and schema, broker, HTTP API, background jobs, metrics — and
// Start and Stop run them in order. cmd/queen and every test server (internal/testserver)
// build their brokers here, so production and tests share one wiring and one set of defaults;
// tests differ only through Options.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/admin"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/dashboard"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// shutdownTimeout bounds the wait for in-flight HTTP requests at Stop.
const shutdownTimeout = 10 * time.Second

// App is one broker instance: its parts and their order. Build it with New, then Start and
// Stop it (or Run it).
type App struct {
	lifecycle.StartStop // the HTTP server, the migration retry and the profiling server
	lifecycle.Base

	cfg     config.Config
	opts    options
	key     *encryption.Key
	store   *store.Store
	hub     *waiter.Hub
	broker  *broker.Broker
	admin   *admin.Admin // the read side
	metrics *metrics.Collector
	jobs    *maintenance.Runner
	spool   *spool.Spool   // the file buffer, taken in New and released at Stop
	drainer *spool.Drainer // replays the spool through the broker
	// spoolOwned is set once the spool is claimed for this broker's database (claimSpool);
	// ownerRefused logs once that it belongs to another.
	spoolOwned   atomic.Bool
	ownerRefused sync.Once
	handler      http.Handler
	server       *http.Server
	pprof        *http.Server // nil unless cfg.PprofAddr
	addr         net.Addr     // set by Start
	// traceShutdown flushes and stops the OTLP exporter the App built; nil when tracing is
	// off or the tracer provider came from WithTracerProvider (its owner stops it).
	traceShutdown func(context.Context) error

	migrated bool       // the schema was applied in New; otherwise Start retries it
	failed   chan error // the HTTP server stopped on its own
	stopOnce sync.Once
}

// NewLogger is the logger an App logs to unless WithLogger says otherwise: on stderr at the
// configured level, as text or JSON (LOG_FORMAT). cmd/queen uses it before the App exists.
func NewLogger(cfg config.Config) *slog.Logger {
	return slog.New(newLogHandler(os.Stderr, cfg))
}

// newLogHandler is NewLogger's handler writing to w, apart so a test can read what it writes.
func newLogHandler(w io.Writer, cfg config.Config) slog.Handler {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// New builds an instance over the database cfg names. It opens the pool and applies the
// schema, unless WithoutMigration; a database that is down is not an error (routes answer 503
// and Start retries the migration), a failed migration is. cfg must name a database: starting
// an embedded PostgreSQL is the caller's business (cmd/queen). Stop releases what New
// acquired, even when Start was never called.
func New(ctx context.Context, cfg config.Config, opts ...Option) (*App, error) {
	o := options{version: "dev", migrate: true, metricsLoop: true}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = NewLogger(cfg)
	}
	dsn, embedded := cfg.Database()
	if embedded {
		return nil, errors.New("no database configured: set DATABASE_URL or PG_*")
	}
	a := &App{Base: lifecycle.NewBase("app", o.logger, o.clock), cfg: cfg, opts: o, failed: make(chan error, 1)}
	log := o.logger
	var err error
	if cfg.EncryptionKey != "" {
		if a.key, err = encryption.ParseKey(cfg.EncryptionKey); err != nil {
			return nil, err
		}
	}
	apiCfg := httpapi.Config{DefaultBatch: cfg.DefaultBatchSize, DefaultTimeout: cfg.DefaultTimeout,
		WorkerID: cfg.WorkerID, Version: o.version,
		MaxInflightBodyBytes: int64(cfg.MaxInflightBodyBytes), BodyReadTimeout: cfg.HTTPReadTimeout,
		Overloaded: budget.Overloaded, AllowedOrigins: cfg.CORSAllowedOrigins, AllowedHosts: cfg.AllowedHosts,
		ListenHost: cfg.Host, AccessLog: cfg.AccessLog}
	if apiCfg.Auth, err = a.verifier(); err != nil {
		return nil, err
	}
	if cfg.DashboardEnabled {
		// docs/api/dashboard.md §4.1: embedded, or WEBAPP_ROOT's directory.
		d, err := dashboard.New(cfg.WebappRoot)
		if err != nil {
			return nil, err
		}
		apiCfg.Dashboard = d
	}

	a.store, err = store.Open(ctx, store.Options{DSN: dsn, Schema: cfg.DBSchema, MaxConns: int32(cfg.DBPoolSize),
		ConnectTimeout: cfg.DBConnectionTimeout, IdleTimeout: cfg.DBIdleTimeout,
		StatementTimeout: cfg.DBStatementTimeout, LockTimeout: cfg.DBLockTimeout,
		RequestTimeout: cfg.DBRequestTimeout, Log: o.logger,
		Pooler: cfg.DatabasePooler == "transaction", SessionDSN: cfg.DatabaseSessionURL})
	if err != nil {
		return nil, err
	}
	if o.clock != nil {
		a.store.SetClock(o.clock)
	}
	if o.migrate {
		switch err := a.store.Migrate(ctx); {
		case err == nil:
			a.migrated = true
		case errors.Is(err, mq.ErrUnavailable):
			log.Warn("database unreachable at startup; serving and retrying the migration", "err", err)
		default:
			a.store.Close()
			return nil, err
		}
	}

	// After every step that can fail but this one, so a failed New leaves no exporter running.
	tracer, traceShutdown, err := setupTracing(ctx, cfg, o)
	if err != nil {
		a.store.Close()
		return nil, fmt.Errorf("tracing: %w", err)
	}
	a.traceShutdown = traceShutdown
	a.hub = waiter.NewHub()
	a.metrics = metrics.New(metrics.Options{WorkerID: cfg.WorkerID, Store: a.store, Hub: a.hub,
		SampleInterval: cfg.MetricsSampleInterval, FlushInterval: cfg.MetricsAggregateInterval, Log: log,
		XminWarn: cfg.XminWarn,
		// The broker is built below (it records into the metrics); scrapes come only after New.
		Maintenance: func() (push, pop bool) { return a.broker.PushMaintenance(), a.broker.PopMaintenance() },
		Compactions: func() []metrics.Compactions {
			var out []metrics.Compactions
			for _, c := range a.jobs.CompactionCounts() {
				out = append(out, metrics.Compactions{Set: c.Set, Compacted: c.Compacted, Skipped: c.Skipped})
			}
			return out
		},
		ConsumerCalls: func() []metrics.CallCount {
			var out []metrics.CallCount
			for _, c := range a.broker.CallCounts() {
				out = append(out, metrics.CallCount{Kind: c.Kind, Calls: c.Calls, Requests: c.Requests})
			}
			return out
		}})
	a.jobs = maintenance.New(a.store, maintenance.Config{
		WorkerID:                  cfg.WorkerID,
		RetentionInterval:         cfg.RetentionInterval,
		EvictionInterval:          cfg.EvictionInterval,
		LeaseHousekeepingInterval: cfg.LeaseHousekeepingInterval,
		StatsInterval:             cfg.StatsInterval,
		RetentionBatchSize:        cfg.RetentionBatchSize,
		EvictionBatchSize:         cfg.EvictionBatchSize,
		PartitionCleanupDays:      cfg.PartitionCleanupDays,
		MetricsRetentionDays:      cfg.MetricsRetentionDays,
		StatsHistoryRetentionDays: cfg.StatsHistoryRetentionDays,
		CompactInterval:           hotCompactionInterval(cfg.HotCompaction),
		Recorder:                  a.metrics,
	}, log)
	a.broker = broker.New(a.store, a.hub, broker.Config{DefaultSubscriptionMode: cfg.DefaultSubscriptionMode,
		PollInitial: cfg.PopWaitInitialInterval, PollMax: cfg.PopWaitMaxInterval, EncryptionKey: a.key,
		Recorder: a.metrics, PushCalls: cfg.PushConcurrency, ConsumeCalls: cfg.ConsumeConcurrency, Tracer: tracer,
		LimitRefused: a.metrics.LimitRefused}, log)
	if err := a.openSpool(); err != nil {
		a.store.Close()
		return nil, err
	}
	if a.migrated {
		a.afterMigration(ctx)
	}
	apiCfg.Metrics, apiCfg.Jobs, apiCfg.Maintenance, apiCfg.Limits = a.metrics, a.jobs, a.broker, a.broker
	apiCfg.Database = diagnostics{a.store, o.embeddedDir}
	apiCfg.FileBuffer = a.fileBuffer
	apiCfg.XminWarn = cfg.XminWarn
	apiCfg.Tracer = tracer
	a.admin = admin.New(a.store, a.broker, a.key, log)
	a.admin.SetClearLimits(cfg.RetentionBatchSize, cfg.DBStatementTimeout)
	a.handler = withDeadlines(a.store, httpapi.New(a.broker, a.admin, apiCfg, log))
	a.server = newHTTPServer(a.handler, cfg)
	return a, nil
}

// Connection limits of docs/api/operations.md §9.3 that net/http enforces itself.
const (
	// headerTimeout bounds the request line and headers, from the connection becoming active.
	headerTimeout = 10 * time.Second
	// maxHeaderBytes bounds the request line and headers; past it net/http answers 431 and
	// closes the connection.
	maxHeaderBytes = 1 << 20
	// defaultIdleTimeout stands in for an unset HTTPIdleTimeout (a Config built by hand):
	// http.Server would otherwise keep idle connections for ever.
	defaultIdleTimeout = 60 * time.Second
)

// newHTTPServer is the HTTP server with the connection limits of docs/api/operations.md §9.3.
// ReadTimeout stays unset on purpose: it would end parked long polls too; the body deadline
// (HTTP_READ_TIMEOUT) is set per request by the API handler, only while a body is read.
// WriteTimeout stays unset for the same reason (a long poll writes at its end).
func newHTTPServer(h http.Handler, cfg config.Config) *http.Server {
	idle := cfg.HTTPIdleTimeout
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, MaxHeaderBytes: maxHeaderBytes,
		IdleTimeout: idle}
}

// verifier is the authentication the options or the configuration ask for; nil for none. A key
// source that cannot be used stops the broker here (docs/api/operations.md §6.1).
func (a *App) verifier() (*auth.Verifier, error) {
	switch {
	case a.opts.auth != nil:
		return auth.New(*a.opts.auth)
	case a.cfg.JWTEnabled:
		v, err := auth.New(auth.FromConfig(a.cfg))
		if err == nil {
			a.Logger().Info("authentication enabled", "algorithm", a.cfg.JWTAlgorithm)
		}
		return v, err
	}
	return nil, nil
}

// afterMigration runs the startup checks that need the schema.
func (a *App) afterMigration(ctx context.Context) {
	if a.key == nil {
		a.broker.WarnPlaintextQueues(ctx)
	}
}

// Start binds the HTTP listener (unless WithListener gave one), starts the metrics, the
// broker and the jobs, in that order, and serves. Like every part, the App runs until Stop,
// not until ctx ends.
func (a *App) Start(ctx context.Context) error {
	return a.StartWith(ctx, func(ctx context.Context) error {
		ln := a.opts.listener
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", net.JoinHostPort(a.cfg.Host, strconv.Itoa(a.cfg.Port))); err != nil {
				return err
			}
		}
		if err := lifecycle.StartAll(ctx, a.parts()...); err != nil {
			ln.Close()
			return err
		}
		a.addr = ln.Addr()
		a.Logger().Info("queen-go listening", "addr", a.addr.String(), "version", a.opts.version, "schema", a.store.Schema())
		a.warnIfOpen()
		a.Go(func(context.Context) {
			if err := a.server.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				a.failed <- err
			}
		})
		if !a.migrated && a.opts.migrate {
			a.Go(a.retryMigration)
		}
		a.servePprof()
		return nil
	})
}

// warnIfOpen logs one WARN line when the broker has no authentication and listens beyond this
// machine: anyone who reaches the port can read and change every queue (docs/deploy.md). The
// browser checks (CORS_ALLOWED_ORIGINS, ALLOWED_HOSTS) keep web pages out, not other machines.
func (a *App) warnIfOpen() {
	if a.cfg.JWTEnabled || a.opts.auth != nil {
		return
	}
	if tcp, ok := a.addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return
	}
	a.Logger().Warn("the broker is open: authentication is off and it listens on a non-loopback address, so anyone who reaches it can read, change and delete every queue",
		"addr", a.addr.String(),
		"fix", "set HOST=127.0.0.1 to serve this machine only, or JWT_ENABLED=true with JWT_SECRET or JWT_JWKS_URL (docs/api/operations.md §6)")
}

// parts lists the lifecycle parts in start order. Stop stops them in reverse: the jobs, then
// the drainer (its batch in flight is cancelled and replayed next run), then the broker, then
// the spool's writer (the broker may spool until it stops), then the metrics, whose last flush
// then holds everything the others recorded.
func (a *App) parts() []lifecycle.Service {
	parts := []lifecycle.Service{a.spool, a.broker, a.drainer, a.jobs}
	if a.opts.metricsLoop {
		parts = append([]lifecycle.Service{a.metrics}, parts...)
	}
	return parts
}

// retryMigration applies the schema once the database answers, every second until it does.
func (a *App) retryMigration(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch err := a.store.Migrate(ctx); {
		case err == nil:
			a.Logger().Info("database reachable; schema applied")
			a.afterMigration(ctx)
			return
		case ctx.Err() != nil:
			return
		case !errors.Is(err, mq.ErrUnavailable):
			a.Logger().Error("migration failed", "err", err)
			return
		}
	}
}

// Stop shuts down in order: parked pops answer at once, in-flight requests finish (at most
// 10 s), then the jobs stop (releasing their locks), the broker writes what it accepted and
// ends its listener, the metrics flush a last time, and the pool closes. It returns when every
// goroutine the App started has ended, and is safe to call again.
func (a *App) Stop() {
	a.stopOnce.Do(func() {
		a.hub.Close()
		if a.Running() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			if err := a.server.Shutdown(sctx); err != nil {
				a.Logger().Warn("in-flight requests did not finish in time", "err", err)
				a.server.Close()
			}
			cancel()
			if a.pprof != nil {
				a.pprof.Close()
			}
			lifecycle.StopAll(a.parts()...)
		}
		a.StartStop.Stop()
		a.spool.Close() // releases FILE_BUFFER_DIR, also when Start never ran
		a.store.Close()
		if a.traceShutdown != nil {
			// Last: the spans of everything above are exported, within a bound.
			sctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
			if err := a.traceShutdown(sctx); err != nil {
				a.Logger().Warn("exporting the last spans failed", "err", err)
			}
			cancel()
		}
	})
}

// Run starts the App, serves until ctx ends or the HTTP server fails, and stops it.
func (a *App) Run(ctx context.Context) error {
	if err := a.Start(ctx); err != nil {
		a.Stop()
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-a.failed:
		err = fmt.Errorf("http server: %w", err)
	}
	a.Logger().Info("shutting down")
	a.Stop()
	return err
}

// Handler is the HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Addr is the HTTP listener's address; nil before Start.
func (a *App) Addr() net.Addr { return a.addr }

// URL is the base URL of the HTTP API, for tests and logs; "" before Start.
func (a *App) URL() string {
	if a.addr == nil {
		return ""
	}
	return "http://" + a.addr.String()
}

// Store is the instance's database access.
func (a *App) Store() *store.Store { return a.store }

// Broker is the instance's data path.
func (a *App) Broker() *broker.Broker { return a.broker }

// Metrics is the instance's metrics collector.
func (a *App) Metrics() *metrics.Collector { return a.metrics }

// Hub is the instance's parked pops.
func (a *App) Hub() *waiter.Hub { return a.hub }

// Jobs is the instance's background-job runner.
func (a *App) Jobs() *maintenance.Runner { return a.jobs }

// diagnostics is the store's database detail, naming an embedded PostgreSQL by its data
// directory (the address would be a private socket of this process).
type diagnostics struct {
	store       *store.Store
	embeddedDir string
}

// DatabaseDetail implements httpapi.Diagnostics.
func (d diagnostics) DatabaseDetail() mq.DatabaseDetail {
	out := d.store.DatabaseDetail()
	if d.embeddedDir != "" {
		out.Embedded, out.Target = true, "embedded ("+d.embeddedDir+")"
	}
	return out
}

// hotCompactionInterval is how often the instance checks the hot sets for a rewrite
// (HOT_COMPACTION): every second when auto, never when off.
func hotCompactionInterval(mode string) time.Duration {
	if mode == "off" {
		return 0
	}
	return time.Second
}
