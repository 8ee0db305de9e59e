// Package testserver starts real brokers for tests over a real PostgreSQL database. It wires
// nothing itself: each server is an internal/app App, built by the same function as
// cmd/queen's, from the production defaults and a few test settings (see Config).
package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
)

// Server is one running broker instance.
type Server struct {
	URL    string
	Store  *store.Store
	Broker *broker.Broker
	Clock  *Clock // nil unless Options.FakeClock
	// Metrics is the broker's recorder; tests flush it to see per-minute figures.
	Metrics *metrics.Collector
	// Jobs runs the background jobs on demand (RunOnce); they run on their own only when
	// Options.Maintenance gives them intervals.
	Jobs *maintenance.Runner
	// App is the instance itself.
	App *app.App
}

// Options tune a test server.
type Options struct {
	Schema         string // default queen_go
	FakeClock      bool   // drive "now" from a Clock the test moves
	DefaultTimeout time.Duration
	PollInitial    time.Duration
	PollMax        time.Duration
	EncryptionKey  string // QUEEN_ENCRYPTION_KEY, 64 hex characters
	// JWTSecret, when set, turns authentication on with HS256, this secret
	// and the default claims, role names and skip paths.
	JWTSecret string
	// Auth, when set, turns authentication on with exactly this configuration
	// (it wins over JWTSecret).
	Auth *auth.Config
	// Maintenance configures the background jobs; nil: default limits and no schedule.
	Maintenance *maintenance.Config
	// DBConnectionTimeout and DBRequestTimeout replace the test servers' generous database
	// deadlines (15 s, 60 s) for tests about unavailability; zero keeps them.
	DBConnectionTimeout, DBRequestTimeout time.Duration
	// TracerProvider, when set, receives the broker's spans (app.WithTracerProvider); tests
	// pass an SDK provider with a tracetest span recorder.
	TracerProvider trace.TracerProvider
	// XminWarn replaces XMIN_WARN_SECONDS (300 s) for tests of the held-horizon warning.
	XminWarn time.Duration
	// Env sets configuration variables as the environment would (CORS_ALLOWED_ORIGINS,
	// ALLOWED_HOSTS, HOST, …), read by config.Load before the settings above apply.
	Env map[string]string
}

// PoolSize is a test server's DB_POOL_SIZE. It is small on purpose: a test package runs
// -parallel (GOMAXPROCS) servers at once and `make test` two packages at once, on a PostgreSQL
// that others share, and every server also holds one LISTEN connection; the suite's total is
// budgeted in package pgtest (pgtest.Budget). Tests that need more concurrency than this
// queue for a connection within DB_CONNECTION_TIMEOUT, as production requests do.
const PoolSize = 5

// Migrate applies the schema to dsn once, for TestMain.
func Migrate(ctx context.Context, dsn, schema string) error {
	// A server shared with other clients can be full for a moment (another package's test
	// closing its brokers, another run): a refusal is retried for up to two minutes before
	// it is reported with the suite's connection budget.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := migrateOnce(ctx, dsn, schema)
		if !pgtest.TooManyClients(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w\n%s", err, pgtest.BudgetMessage(err))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func migrateOnce(ctx context.Context, dsn, schema string) error {
	st, err := store.Open(ctx, store.Options{DSN: dsn, Schema: schema, MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Migrate(ctx)
}

// Start runs a broker over dsn until the test ends. The schema must exist (Migrate).
func Start(t testing.TB, dsn string, o Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &Server{}
	opts := []app.Option{app.WithVersion("test"), app.WithListener(ln), app.WithoutMigration(), app.WithoutMetricsLoop()}
	if o.FakeClock {
		s.Clock = NewClock(time.Now())
		opts = append(opts, app.WithClock(s.Clock.Now))
	}
	if o.TracerProvider != nil {
		opts = append(opts, app.WithTracerProvider(o.TracerProvider))
	}
	if ac := authConfig(o); ac != nil {
		opts = append(opts, app.WithAuth(*ac))
	}
	cfg := Config(dsn, o)
	cfg.FileBufferDir = t.TempDir() // one spool per server: the directory is exclusive
	a, err := app.New(context.Background(), cfg, opts...)
	if err != nil {
		ln.Close()
		pgtest.CheckConn(t, err)
		t.Fatalf("build broker: %v", err)
	}
	if err := a.Start(context.Background()); err != nil {
		a.Stop()
		pgtest.CheckConn(t, err)
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(a.Stop)
	// A broker that met a full server answers 503, which a test reports as whatever it was
	// checking; say what happened (registered after Stop, so it runs before it). A test that
	// passed anyway (its requests were retried, or waited for a connection) only logs it: a
	// moment of a full shared server is not a failure of the code under test.
	t.Cleanup(func() {
		e := a.Store().DatabaseDetail().LastError
		if !pgtest.TooManyClientsText(e) {
			return
		}
		if t.Failed() {
			t.Errorf("%s", pgtest.BudgetMessage(errors.New(e)))
			return
		}
		t.Logf("the broker met a full PostgreSQL server for a moment and the test passed regardless: %s", e)
	})
	s.App, s.URL, s.Store, s.Broker, s.Metrics, s.Jobs = a, a.URL(), a.Store(), a.Broker(), a.Metrics(), a.Jobs()
	return s
}

// Config is the configuration of a test server: the production defaults (what config.Load
// gives an empty environment), with what tests need instead. Reading no environment keeps a
// developer's variables out of the tests.
//
//   - WorkerID "test", log level warn, and a pool of PoolSize (many servers share one PostgreSQL);
//   - database deadlines of 15 s (connection) and 60 s (request) instead of 2 s and 10 s;
//   - (Start only) a spool directory of the test's own, since each is exclusive to one server;
//   - no job schedule unless o.Maintenance gives one: tests run jobs with RunOnce;
//   - o's poll intervals as given, even above the 1 s ceiling Load applies: slow fallbacks
//     prove that a wake-up came from a signal.
func Config(dsn string, o Options) config.Config {
	cfg, err := config.Load(nil, func(k string) string { return o.Env[k] })
	if err != nil {
		panic(fmt.Sprintf("the configuration does not load: %v", err)) // a bug, not a test failure
	}
	cfg.DatabaseURL, cfg.WorkerID, cfg.LogLevel, cfg.DBPoolSize = dsn, "test", "warn", PoolSize
	throughPooler(&cfg, dsn)
	// Generous database deadlines: a test suite shares two cores and one PostgreSQL with other
	// packages, and a fresh session compiles the PL/pgSQL functions on its first call, so the
	// production 2 s / 10 s would turn load into 503s in tests about something else. The
	// deadline tests (internal/app) set their own small values.
	cfg.DBConnectionTimeout, cfg.DBRequestTimeout = 15*time.Second, 60*time.Second
	if o.DBConnectionTimeout > 0 {
		cfg.DBConnectionTimeout = o.DBConnectionTimeout
	}
	if o.DBRequestTimeout > 0 {
		cfg.DBRequestTimeout = o.DBRequestTimeout
	}
	if o.Schema != "" {
		cfg.DBSchema = o.Schema
	}
	if o.DefaultTimeout > 0 {
		cfg.DefaultTimeout = o.DefaultTimeout
	}
	if o.PollInitial > 0 {
		cfg.PopWaitInitialInterval = o.PollInitial
	}
	if o.PollMax > 0 {
		cfg.PopWaitMaxInterval = o.PollMax
	}
	cfg.EncryptionKey = o.EncryptionKey
	if o.XminWarn > 0 {
		cfg.XminWarn = o.XminWarn
	}
	cfg.RetentionInterval, cfg.EvictionInterval, cfg.LeaseHousekeepingInterval, cfg.StatsInterval = 0, 0, 0, 0
	if m := o.Maintenance; m != nil {
		cfg.RetentionInterval, cfg.EvictionInterval = m.RetentionInterval, m.EvictionInterval
		cfg.LeaseHousekeepingInterval, cfg.StatsInterval = m.LeaseHousekeepingInterval, m.StatsInterval
		cfg.RetentionBatchSize, cfg.EvictionBatchSize = m.RetentionBatchSize, m.EvictionBatchSize
		cfg.PartitionCleanupDays, cfg.MetricsRetentionDays = m.PartitionCleanupDays, m.MetricsRetentionDays
		cfg.StatsHistoryRetentionDays = m.StatsHistoryRetentionDays
	}
	return cfg
}

// authConfig returns the authentication settings o asks for, nil for none.
func authConfig(o Options) *auth.Config {
	if o.Auth != nil {
		return o.Auth
	}
	if o.JWTSecret == "" {
		return nil
	}
	return &auth.Config{Algorithm: "HS256", Secret: o.JWTSecret, ClockSkew: 30 * time.Second, SkipPaths: auth.DefaultSkipPaths}
}

// Clock is a settable clock for tests: it starts at a given time and moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Main is a test package's TestMain: a fresh database for the package (pgtest), migrated,
// its DSN stored in *dsn, then run (usually m.Run) — dropped afterwards.
func Main(m *testing.M, dsn *string, run func() int) {
	pgtest.Main(m, func(d string) int {
		if err := Migrate(context.Background(), d, ""); err != nil {
			fmt.Fprintln(os.Stderr, "migrate:", err)
			return 1
		}
		stop, err := startPooler(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pooler:", err)
			return 1
		}
		defer stop()
		*dsn = d
		return run()
	})
}
