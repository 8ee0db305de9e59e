// Package testserver starts real brokers for tests: a store over a real PostgreSQL database,
// the broker, its notification listener and the HTTP API on an httptest server.
package testserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/admin"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
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
}

// Migrate applies the schema to dsn once, for TestMain.
func Migrate(ctx context.Context, dsn, schema string) error {
	st, err := store.Open(ctx, store.Options{DSN: dsn, Schema: schema, MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Migrate(ctx)
}

// Start runs a broker over dsn until the test ends.
func Start(t testing.TB, dsn string, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, store.Options{DSN: dsn, Schema: o.Schema, MaxConns: 20,
		ConnectTimeout: 2 * time.Second, StatementTimeout: 30 * time.Second, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	s := &Server{Store: st}
	if o.FakeClock {
		s.Clock = NewClock(time.Now())
		st.SetClock(s.Clock.Now)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub := waiter.NewHub()
	var key *encryption.Key
	if o.EncryptionKey != "" {
		if key, err = encryption.ParseKey(o.EncryptionKey); err != nil {
			t.Fatalf("encryption key: %v", err)
		}
	}
	s.Metrics = metrics.New(metrics.Options{WorkerID: "test", Store: st, Hub: hub, Log: log})
	s.Jobs = maintenance.New(st, jobsConfig(o, s.Metrics), log)
	s.Broker = broker.New(st, hub, broker.Config{PollInitial: o.PollInitial, PollMax: o.PollMax, EncryptionKey: key,
		Recorder: s.Metrics}, log)
	s.Jobs.Start(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Broker.Listen(ctx) }()
	apiCfg := httpapi.Config{DefaultTimeout: o.DefaultTimeout, WorkerID: "test", Version: "test",
		Metrics: s.Metrics, Jobs: s.Jobs}
	if ac := authConfig(o); ac != nil {
		if apiCfg.Auth, err = auth.New(*ac); err != nil {
			t.Fatalf("auth: %v", err)
		}
	}
	srv := httptest.NewServer(httpapi.New(s.Broker, admin.New(st, s.Broker, key, log), apiCfg, log))
	s.URL = srv.URL
	t.Cleanup(func() {
		hub.Close()
		srv.Close()
		cancel()
		wg.Wait()
		s.Jobs.Stop()
		st.Close()
	})
	return s
}

// jobsConfig is o.Maintenance, or the production limits without a schedule.
func jobsConfig(o Options, rec maintenance.Recorder) maintenance.Config {
	c := maintenance.Config{RetentionBatchSize: 1000, EvictionBatchSize: 1000, PartitionCleanupDays: 30,
		MetricsRetentionDays: 90, StatsHistoryRetentionDays: 7}
	if o.Maintenance != nil {
		c = *o.Maintenance
	}
	c.WorkerID, c.Recorder = "test", rec
	return c
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
		*dsn = d
		return run()
	})
}
