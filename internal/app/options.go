package app

import (
	"log/slog"
	"net"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/auth"
)

// Option changes how New builds an App. Production passes the logger and the version; tests
// also pass what makes them fast and deterministic. Everything else comes from config.Config.
type Option func(*options)

type options struct {
	logger      *slog.Logger
	clock       func() time.Time
	version     string
	listener    net.Listener
	auth        *auth.Config
	migrate     bool
	metricsLoop bool
	embeddedDir string // the embedded PostgreSQL's data directory; "" for an external database
	// tracerProvider replaces the OTLP exporter, whatever the configuration says.
	tracerProvider trace.TracerProvider
}

// WithLogger sets the logger every part logs to (default NewLogger(cfg)).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClock makes now a clock the caller moves: the store passes it to SQL instead of letting
// the database clock decide, and the metrics bucket by it. Tests use it to see time pass
// without sleeping.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithVersion sets the version /health reports (default "dev").
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithListener serves HTTP on ln instead of binding cfg.Host:cfg.Port (tests: 127.0.0.1:0).
// The App closes it at Stop.
func WithListener(ln net.Listener) Option { return func(o *options) { o.listener = ln } }

// WithAuth turns authentication on with exactly c, whatever the configuration's JWT settings.
func WithAuth(c auth.Config) Option { return func(o *options) { o.auth = &c } }

// WithoutMigration skips applying the schema at New (and the checks that follow it), for
// callers that applied it already: test packages migrate once, in TestMain.
func WithoutMigration() Option { return func(o *options) { o.migrate = false } }

// WithoutMetricsLoop keeps the metrics from sampling and flushing on their schedule; they still
// count, and the caller flushes them by hand (tests that check per-minute figures).
func WithoutMetricsLoop() Option { return func(o *options) { o.metricsLoop = false } }

// WithEmbedded says the database is the embedded PostgreSQL of dataDir, so the admin health
// route names it as such instead of a localhost address (docs/api/admin-api.md §10.2).
func WithEmbedded(dataDir string) Option { return func(o *options) { o.embeddedDir = dataDir } }

// WithTracerProvider makes the App trace through tp, whatever OTEL_EXPORTER_OTLP_ENDPOINT says:
// tests pass an SDK provider with an in-process span recorder (tracetest), an embedding
// program its own provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}
