// Package config reads the broker's configuration from command-line flags and
// environment variables (docs/api/operations.md §1).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Config is the broker's complete configuration. Durations are converted from
// the unit the variable is documented in (milliseconds unless noted).
type Config struct {
	// Port is the HTTP listen port (PORT, --port).
	Port int
	// Host is the HTTP listen address (HOST, --host).
	Host string
	// CORSAllowedOrigins lists the Web origins whose pages may call the broker while
	// authentication is off (CORS_ALLOWED_ORIGINS, normalized by NormalizeOrigin); "*" allows
	// any, as Queen's reference does. Empty: only the broker's own pages (the dashboard).
	CORSAllowedOrigins []string
	// AllowedHosts lists the host names a request's Host header may name besides localhost and
	// IP addresses (ALLOWED_HOSTS; ".example.com" covers subdomains, "*" any). Empty: any host
	// when HOST is not a loopback address, only those when it is (DNS rebinding).
	AllowedHosts []string
	// WorkerID labels this instance in metrics, /health and trace records
	// (WORKER_ID, default the host name).
	WorkerID string
	// LogLevel is one of trace, debug, info, warn, error (LOG_LEVEL); --dev
	// forces debug.
	LogLevel string
	// Dev is set by --dev.
	Dev bool
	// PprofAddr is where Go profiling is served (PPROF_ADDR, queen-go's own); "" = off.
	PprofAddr string
	// DataDir holds embedded PostgreSQL and the default spool (QUEEN_DATA_DIR).
	DataDir string
	// WebappRoot serves the dashboard from disk (WEBAPP_ROOT) instead of the embedded assets.
	WebappRoot string
	// DashboardEnabled serves the dashboard at / and /assets/* (DASHBOARD_ENABLED, default true).
	DashboardEnabled bool
	// HTTPIdleTimeout closes a keep-alive connection idle this long (HTTP_IDLE_TIMEOUT).
	HTTPIdleTimeout time.Duration
	// HTTPReadTimeout is the time a request body has to arrive after the headers; past it
	// the request gets 408 (HTTP_READ_TIMEOUT).
	HTTPReadTimeout time.Duration
	// MaxInflightBodyBytes bounds the request-body bytes held in memory at once, at least
	// 64 MiB (QUEEN_MAX_INFLIGHT_BODY_BYTES).
	MaxInflightBodyBytes int
	// LogFormat is "text" or "json" (LOG_FORMAT): json for log shippers that parse one object
	// a line, text for people reading a terminal.
	LogFormat string
	// AccessLog writes one line per request, at info level in LogFormat (ACCESS_LOG, queen-go's
	// own; default off, since a busy broker answers thousands of requests a second).
	AccessLog bool
	// OTLPEndpoint is OTEL_EXPORTER_OTLP_ENDPOINT, the OTLP/HTTP collector's base URL; tracing
	// is off (a no-op tracer) unless it or OTLPTracesEndpoint is set. The exporter itself reads
	// it and the other standard OTEL_EXPORTER_OTLP_* variables.
	OTLPEndpoint string
	// OTLPTracesEndpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the full traces URL that
	// overrides OTLPEndpoint for traces.
	OTLPTracesEndpoint string

	// DatabaseURL is used verbatim when set (DATABASE_URL).
	DatabaseURL string
	// DatabasePooler says what sits between the broker and PostgreSQL (DATABASE_POOLER): "none"
	// (a direct connection: session state lasts) or "transaction" (a pooler in transaction mode,
	// such as PgBouncer's pool_mode=transaction: every transaction may run on another server
	// session, so the broker keeps no session state there; docs/deploy.md "Behind a pooler").
	DatabasePooler string
	// DatabaseSessionURL names a direct connection for what needs a session of its own behind a
	// transaction pooler: the LISTEN of cross-instance wake-ups and the background jobs' advisory
	// locks (DATABASE_SESSION_URL); empty: the broker polls and leads by lease rows instead.
	DatabaseSessionURL string
	// PGHost is the database host (PG_HOST).
	PGHost string
	// PGPort is the database port (PG_PORT).
	PGPort int
	// PGDB is the database name (PG_DB).
	PGDB string
	// PGUser is the database user (PG_USER).
	PGUser string
	// PGPassword is the database password (PG_PASSWORD).
	PGPassword string
	// PGUseSSL turns TLS on for PG_* connections (PG_USE_SSL).
	PGUseSSL bool
	// PGSSLRejectUnauthorized verifies the server certificate and host name
	// when TLS is on (PG_SSL_REJECT_UNAUTHORIZED).
	PGSSLRejectUnauthorized bool
	// PGConfigured records that at least one of PG_HOST, PG_PORT, PG_DB,
	// PG_USER, PG_PASSWORD was set, which selects an external database over
	// the embedded one (docs/api/operations.md §2.1).
	PGConfigured bool
	// DBSchema holds every queen-go object (DB_SCHEMA). Load only accepts
	// lower-case letters, digits and underscores, so it can go into SQL as is.
	DBSchema string
	// DBPoolSize is the most pooled connections per instance (DB_POOL_SIZE).
	DBPoolSize int
	// PushConcurrency bounds concurrent push calls to the database (PUSH_CONCURRENCY); 0 picks
	// the CPU count, at least 2.
	PushConcurrency int
	// ConsumeConcurrency bounds the pops, acks and transactions running in the database at
	// once (CONSUME_CONCURRENCY); 0 picks one per CPU, at least 2.
	ConsumeConcurrency int
	// DBConnectionTimeout bounds the wait for a pool connection
	// (DB_CONNECTION_TIMEOUT).
	DBConnectionTimeout time.Duration
	// DBIdleTimeout closes idle pooled connections (DB_IDLE_TIMEOUT).
	DBIdleTimeout time.Duration
	// DBStatementTimeout is PostgreSQL's statement_timeout; 0 disables it
	// (DB_STATEMENT_TIMEOUT).
	DBStatementTimeout time.Duration
	// DBLockTimeout is PostgreSQL's lock_timeout; 0 disables it
	// (DB_LOCK_TIMEOUT).
	DBLockTimeout time.Duration
	// PGBinDir holds initdb and postgres for embedded PostgreSQL (PG_BIN_DIR).
	PGBinDir string
	// DBRequestTimeout bounds all the database work of one request on the broker's own clock,
	// since a frozen server enforces no statement_timeout (DB_REQUEST_TIMEOUT,
	// docs/api/operations.md §9.1).
	DBRequestTimeout time.Duration

	// DefaultTimeout is the long-poll timeout when a pop gives none, at most
	// two minutes (DEFAULT_TIMEOUT).
	DefaultTimeout time.Duration
	// DefaultBatchSize is the pop batch when a pop gives none
	// (DEFAULT_BATCH_SIZE).
	DefaultBatchSize int
	// DefaultSubscriptionMode is "", "all", "from_beginning" (= all), "new" or "new-only"
	// (DEFAULT_SUBSCRIPTION_MODE); "" means all.
	DefaultSubscriptionMode string
	// PopWaitInitialInterval is the first fallback re-check of a parked pop
	// (POP_WAIT_INITIAL_INTERVAL_MS); never above PopWaitMaxInterval.
	PopWaitInitialInterval time.Duration
	// PopWaitMaxInterval is the longest fallback interval, capped at one
	// second (POP_WAIT_MAX_INTERVAL_MS).
	PopWaitMaxInterval time.Duration

	// FileBufferDir is the spool directory (FILE_BUFFER_DIR, default
	// DataDir/buffers).
	FileBufferDir string
	// FileBufferFlushInterval is the replay tick (FILE_BUFFER_FLUSH_MS).
	FileBufferFlushInterval time.Duration
	// FileBufferMaxBatch is the items per replay transaction
	// (FILE_BUFFER_MAX_BATCH).
	FileBufferMaxBatch int
	// FileBufferEventsPerFile is the items per spool file
	// (FILE_BUFFER_EVENTS_PER_FILE).
	FileBufferEventsPerFile int

	// EncryptionKey is the AES-256 key as 64 hex characters, or ""
	// (QUEEN_ENCRYPTION_KEY).
	EncryptionKey string

	// RetentionInterval is the time between retention runs
	// (RETENTION_INTERVAL).
	RetentionInterval time.Duration
	// RetentionBatchSize is the rows per retention statement
	// (RETENTION_BATCH_SIZE).
	RetentionBatchSize int
	// PartitionCleanupDays is the idle time after which empty partitions are
	// deleted (PARTITION_CLEANUP_DAYS).
	PartitionCleanupDays int
	// MetricsRetentionDays is how long metrics and retention history are kept
	// (METRICS_RETENTION_DAYS).
	MetricsRetentionDays int
	// EvictionInterval is the time between eviction runs (EVICTION_INTERVAL).
	EvictionInterval time.Duration
	// EvictionBatchSize is the messages per eviction statement
	// (EVICTION_BATCH_SIZE).
	EvictionBatchSize int
	// LeaseHousekeepingInterval is the time between lease housekeeping runs
	// (LEASE_HOUSEKEEPING_INTERVAL_MS).
	LeaseHousekeepingInterval time.Duration
	// StatsInterval is the time between stats computations
	// (STATS_INTERVAL_MS).
	StatsInterval time.Duration
	// StatsHistoryRetentionDays is how long stats history is kept
	// (STATS_HISTORY_RETENTION_DAYS).
	StatsHistoryRetentionDays int
	// MetricsSampleInterval is the time between in-process metric samples
	// (METRICS_SAMPLE_INTERVAL_MS).
	MetricsSampleInterval time.Duration
	// XminWarn is how long a session of the database may hold its snapshot before the broker
	// warns and queen_db_oldest_xmin_warning turns 1 (XMIN_WARN_SECONDS): a held snapshot
	// keeps vacuum from removing the queue tables' dead row versions.
	XminWarn time.Duration
	// HotCompaction is auto or off (HOT_COMPACTION): whether the instance rewrites the hot
	// tables while a held snapshot horizon keeps their dead row versions (docs/operations.md,
	// "A held snapshot horizon"). Off spares a hot standby the rewrite's exclusive lock and a
	// logical subscriber of those tables its TRUNCATE.
	HotCompaction string
	// MetricsAggregateInterval is the time between metric flushes to the
	// database (METRICS_AGGREGATE_INTERVAL_S, in seconds).
	MetricsAggregateInterval time.Duration

	// JWTEnabled turns authentication on (JWT_ENABLED).
	JWTEnabled bool
	// JWTAlgorithm is HS256, RS256, RS384, RS512, EdDSA or auto, in that
	// spelling whatever the case it was given in (JWT_ALGORITHM).
	JWTAlgorithm string
	// JWTSecret is the HS256 shared secret (JWT_SECRET).
	JWTSecret string
	// JWTJWKSURL is the JWKS endpoint (JWT_JWKS_URL).
	JWTJWKSURL string
	// JWTPublicKey is a PEM public key (JWT_PUBLIC_KEY).
	JWTPublicKey string
	// JWTIssuer is the required iss when set (JWT_ISSUER).
	JWTIssuer string
	// JWTAudience is the required aud when set (JWT_AUDIENCE).
	JWTAudience string
	// JWTClockSkew is the tolerance on exp and nbf (JWT_CLOCK_SKEW, seconds).
	JWTClockSkew time.Duration
	// JWTSkipPaths bypass authentication (JWT_SKIP_PATHS, comma-separated;
	// blanks around entries and empty entries are dropped).
	JWTSkipPaths []string
	// JWTJWKSRefreshInterval is the time between JWKS refreshes
	// (JWT_JWKS_REFRESH_INTERVAL, seconds).
	JWTJWKSRefreshInterval time.Duration
	// JWTJWKSTimeout bounds a JWKS fetch (JWT_JWKS_TIMEOUT_MS).
	JWTJWKSTimeout time.Duration
	// JWTRolesClaim is the claim holding one role (JWT_ROLES_CLAIM).
	JWTRolesClaim string
	// JWTRolesArrayClaim is the claim holding several roles
	// (JWT_ROLES_ARRAY_CLAIM).
	JWTRolesArrayClaim string
	// JWTRoleAdmin is the role name of the admin level (JWT_ROLE_ADMIN).
	JWTRoleAdmin string
	// JWTRoleReadWrite is the role name of the read-write level
	// (JWT_ROLE_READ_WRITE).
	JWTRoleReadWrite string
	// JWTRoleReadOnly is the role name of the read-only level
	// (JWT_ROLE_READ_ONLY).
	JWTRoleReadOnly string
	// JWTTenantClaim names the tenant claim (JWT_TENANT_CLAIM).
	JWTTenantClaim string
	// JWTRoleOperator is the role that reads every tenant (JWT_ROLE_OPERATOR).
	JWTRoleOperator string

	// ShowVersion is set by --version. When it or ShowHelp is set, Load
	// returns without reading the environment, so a broken variable cannot
	// stop --help or --version from working; the other fields are then zero.
	ShowVersion bool
	// ShowHelp is set by --help (or -h).
	ShowHelp bool
}

// Limits the API reference imposes by clamping rather than by rejecting the value.
const (
	maxDefaultTimeout  = 120 * time.Second
	maxPopWaitInterval = time.Second
)

// Load builds the configuration from args (the command line without the
// program name) and getenv (os.Getenv in production; injected so tests do not
// depend on the process environment). Precedence: flag, then variable, then
// default; an unset or empty variable takes the default. The error names the
// offending flag or variable.
func Load(args []string, getenv func(string) string) (Config, error) {
	var c Config
	fl, err := parseFlags(args)
	if err != nil {
		return Config{}, err
	}
	if fl.help || fl.version {
		return Config{ShowHelp: fl.help, ShowVersion: fl.version}, nil
	}
	c.Dev = fl.dev

	for _, v := range variables {
		raw, source := getenv(v.name), v.name
		if o, ok := fl.overrides[v.name]; ok {
			raw, source = o.value, o.flag
		}
		if raw == "" {
			raw = v.def
		}
		if err := v.set(&c, raw); err != nil {
			return Config{}, fmt.Errorf("%s: %w", source, err)
		}
	}
	for _, name := range pgConnectionVars {
		if getenv(name) != "" {
			c.PGConfigured = true
		}
	}
	return c, c.finish()
}

// finish fills the defaults that depend on other values and applies the
// cross-variable rules.
func (c *Config) finish() error {
	if c.Dev {
		c.LogLevel = "debug"
	}
	if c.WorkerID == "" {
		// A host name is stable across restarts, which keeps metrics series
		// continuous; the fallback only matters on a broken system.
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "queen-go"
		}
		c.WorkerID = host
	}
	if c.FileBufferDir == "" {
		c.FileBufferDir = filepath.Join(c.DataDir, "buffers")
	}
	if c.DatabaseSessionURL != "" && c.DatabasePooler != "transaction" {
		// Without a pooler every connection is a session already: a second URL would only
		// split the broker across two targets.
		return errors.New("DATABASE_SESSION_URL is for DATABASE_POOLER=transaction")
	}
	if c.DatabasePooler == "transaction" && c.DatabaseURL == "" && !c.PGConfigured {
		return errors.New("DATABASE_POOLER=transaction needs DATABASE_URL (or PG_*) naming the pooler: the embedded PostgreSQL has none")
	}
	c.DefaultTimeout = min(c.DefaultTimeout, maxDefaultTimeout)
	c.PopWaitMaxInterval = min(c.PopWaitMaxInterval, maxPopWaitInterval)
	c.PopWaitInitialInterval = min(c.PopWaitInitialInterval, c.PopWaitMaxInterval)
	if c.JWTEnabled {
		// docs/api/operations.md §6.1: without a key source the broker must not start,
		// rather than start and reject every token.
		hasRSA := c.JWTJWKSURL != "" || c.JWTPublicKey != ""
		switch {
		case c.JWTAlgorithm == "HS256" && c.JWTSecret == "":
			return errors.New("JWT_ENABLED: JWT_ALGORITHM HS256 needs JWT_SECRET")
		case c.JWTAlgorithm == "auto" && c.JWTSecret == "" && !hasRSA:
			return errors.New("JWT_ENABLED: JWT_ALGORITHM auto needs JWT_SECRET, JWT_JWKS_URL or JWT_PUBLIC_KEY")
		case c.JWTAlgorithm != "HS256" && c.JWTAlgorithm != "auto" && !hasRSA:
			return fmt.Errorf("JWT_ENABLED: JWT_ALGORITHM %s needs JWT_JWKS_URL or JWT_PUBLIC_KEY", c.JWTAlgorithm)
		}
	}
	return nil
}

// flagOverride is a flag value standing in for an environment variable.
type flagOverride struct {
	flag, value string
}

type parsedFlags struct {
	dev, version, help bool
	overrides          map[string]flagOverride // by variable name
}

// parseFlags reads the command line. The flag package accepts both -name and
// --name, and --name=value as well as --name value.
func parseFlags(args []string) (parsedFlags, error) {
	fs := flag.NewFlagSet("queen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; --help text comes from Usage
	var p parsedFlags
	port := fs.String("port", "", "")
	host := fs.String("host", "", "")
	fs.BoolVar(&p.dev, "dev", false, "")
	fs.BoolVar(&p.version, "version", false, "")
	fs.BoolVar(&p.help, "help", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return parsedFlags{help: true}, nil
		}
		return parsedFlags{}, err
	}
	if fs.NArg() > 0 {
		return parsedFlags{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	p.overrides = make(map[string]flagOverride)
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "port":
			p.overrides["PORT"] = flagOverride{"--port", *port}
		case "host":
			p.overrides["HOST"] = flagOverride{"--host", *host}
		case "dev":
			if p.dev {
				// LOG_LEVEL is not even validated when --dev overrides it.
				p.overrides["LOG_LEVEL"] = flagOverride{"--dev", "debug"}
			}
		}
	})
	return p, nil
}

// TracingEnabled reports whether traces are exported: an OTLP endpoint is configured.
func (c Config) TracingEnabled() bool { return c.OTLPEndpoint != "" || c.OTLPTracesEndpoint != "" }

// SlogLevel maps LogLevel to a slog level; slog has no trace level, so trace
// logs as debug (docs/api/operations.md §1.3 says they are the same).
func (c Config) SlogLevel() slog.Level {
	if c.Dev {
		return slog.LevelDebug
	}
	switch c.LogLevel {
	case "trace", "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
