package config

import (
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// variable describes one environment variable. One table drives both parsing
// and --help, so the two cannot drift apart.
type variable struct {
	group string // heading in --help
	name  string
	def   string // default, parsed exactly like a value that was set
	shown string // default as --help shows it, when def is empty or computed
	help  string
	set   func(c *Config, raw string) error
}

// minInflightBodyBytes is the smallest QUEEN_MAX_INFLIGHT_BODY_BYTES: one body of the largest
// size a route accepts (64 MiB) must fit, or such a body could never be served.
const minInflightBodyBytes = 64 << 20

// pgConnectionVars select an external database when any is set (docs/api/operations.md §2.1).
var pgConnectionVars = []string{"PG_HOST", "PG_PORT", "PG_DB", "PG_USER", "PG_PASSWORD"}

var variables = []variable{
	{group: "Server", name: "PORT", def: "6632", help: "listen port",
		set: intVar(0, 65535, func(c *Config) *int { return &c.Port })},
	{group: "Server", name: "HOST", def: "0.0.0.0", help: "listen address",
		set: strVar(func(c *Config) *string { return &c.Host })},
	{group: "Server", name: "CORS_ALLOWED_ORIGINS", shown: `""`,
		help: "comma-separated origins (scheme://host[:port]) whose web pages may call an open broker; * allows any (queen-go's own)",
		set:  originsVar},
	{group: "Server", name: "ALLOWED_HOSTS", shown: `""`,
		help: "comma-separated host names requests may name in Host besides localhost and IP addresses; .example.com allows its subdomains, * any (queen-go's own)",
		set:  hostsVar},
	{group: "Server", name: "WORKER_ID", shown: "the host name", help: "instance label in metrics, /health and traces",
		set: strVar(func(c *Config) *string { return &c.WorkerID })},
	{group: "Server", name: "LOG_LEVEL", def: "info", help: "trace, debug, info, warn or error",
		set: enumVar([]string{"trace", "debug", "info", "warn", "error"}, func(c *Config) *string { return &c.LogLevel })},
	{group: "Server", name: "QUEEN_DATA_DIR", def: "./queen-data", help: "embedded PostgreSQL and default spool",
		set: strVar(func(c *Config) *string { return &c.DataDir })},
	{group: "Server", name: "WEBAPP_ROOT", help: "serve the dashboard from this directory instead of the embedded assets",
		set: strVar(func(c *Config) *string { return &c.WebappRoot })},
	{group: "Server", name: "DASHBOARD_ENABLED", def: "true", help: "false: / and /assets/* answer 404 (no dashboard)",
		set: boolVar(func(c *Config) *bool { return &c.DashboardEnabled })},
	{group: "Server", name: "PPROF_ADDR", help: "serve Go profiling (net/http/pprof) on this address, e.g. 127.0.0.1:6060 (queen-go's own; off when empty)",
		set: strVar(func(c *Config) *string { return &c.PprofAddr })},
	{group: "Server", name: "HTTP_IDLE_TIMEOUT", def: "60000", help: "ms before an idle keep-alive connection closes",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.HTTPIdleTimeout })},
	{group: "Server", name: "HTTP_READ_TIMEOUT", def: "60000", help: "ms after the headers within which a request body must arrive (else 408)",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
	{group: "Server", name: "QUEEN_MAX_INFLIGHT_BODY_BYTES", def: "536870912", shown: "536870912 (512 MiB)",
		help: "most request-body bytes in memory at once (at least 67108864); past it, 503 Server busy",
		set:  intVar(minInflightBodyBytes, math.MaxInt, func(c *Config) *int { return &c.MaxInflightBodyBytes })},
	{group: "Server", name: "LOG_FORMAT", def: "text", help: "text (slog key=value) or json (one JSON object a line, for log shippers; queen-go's own)",
		set: enumVar([]string{"text", "json"}, func(c *Config) *string { return &c.LogFormat })},
	{group: "Server", name: "ACCESS_LOG", def: "false",
		help: "true: one info line per request (method, route pattern, status, duration, bytes), JSON with LOG_FORMAT=json (queen-go's own)",
		set:  boolVar(func(c *Config) *bool { return &c.AccessLog })},
	{group: "Server", name: "OTEL_EXPORTER_OTLP_ENDPOINT", shown: `"" (tracing off)`,
		help: "OTLP/HTTP collector base URL, e.g. http://localhost:4318; traces are exported when set (the other standard OTEL_* variables apply); needs a binary built with -tags otlp (queen-otlp)",
		set:  strVar(func(c *Config) *string { return &c.OTLPEndpoint })},
	{group: "Server", name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", shown: `""`,
		help: "OTLP/HTTP traces URL, e.g. http://localhost:4318/v1/traces; also turns tracing on",
		set:  strVar(func(c *Config) *string { return &c.OTLPTracesEndpoint })},

	{group: "Database", name: "DATABASE_URL", help: "PostgreSQL URL or key/value string; overrides PG_*",
		set: strVar(func(c *Config) *string { return &c.DatabaseURL })},
	{group: "Database", name: "DATABASE_POOLER", def: "none",
		help: "none (a direct connection) or transaction (PgBouncer's pool_mode=transaction or a managed pooler: no session state is kept; queen-go's own)",
		set:  enumVar([]string{"none", "transaction"}, func(c *Config) *string { return &c.DatabasePooler })},
	{group: "Database", name: "DATABASE_SESSION_URL", shown: `""`,
		help: "with DATABASE_POOLER=transaction: a direct connection for LISTEN and the jobs' advisory locks; unset: wake-ups by polling, leadership by lease rows (queen-go's own)",
		set:  strVar(func(c *Config) *string { return &c.DatabaseSessionURL })},
	{group: "Database", name: "PG_HOST", def: "localhost", help: "database host",
		set: strVar(func(c *Config) *string { return &c.PGHost })},
	{group: "Database", name: "PG_PORT", def: "5432", help: "database port",
		set: intVar(1, 65535, func(c *Config) *int { return &c.PGPort })},
	{group: "Database", name: "PG_DB", def: "postgres", help: "database name",
		set: strVar(func(c *Config) *string { return &c.PGDB })},
	{group: "Database", name: "PG_USER", def: "postgres", help: "database user",
		set: strVar(func(c *Config) *string { return &c.PGUser })},
	{group: "Database", name: "PG_PASSWORD", def: "postgres", help: "database password",
		set: strVar(func(c *Config) *string { return &c.PGPassword })},
	{group: "Database", name: "PG_USE_SSL", def: "false", help: "connect with TLS",
		set: boolVar(func(c *Config) *bool { return &c.PGUseSSL })},
	{group: "Database", name: "PG_SSL_REJECT_UNAUTHORIZED", def: "true", help: "with TLS: verify certificate and host name",
		set: boolVar(func(c *Config) *bool { return &c.PGSSLRejectUnauthorized })},
	{group: "Database", name: "DB_SCHEMA", def: "queen_go", help: "schema holding every queen-go object",
		set: schemaVar},
	{group: "Database", name: "DB_POOL_SIZE", def: "50", help: "most database connections per instance",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.DBPoolSize })},
	{group: "Database", name: "DB_CONNECTION_TIMEOUT", def: "2000", help: "ms to wait for a connection",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.DBConnectionTimeout })},
	{group: "Database", name: "DB_IDLE_TIMEOUT", def: "30000", help: "ms before an idle connection closes",
		set: durVar(0, time.Millisecond, func(c *Config) *time.Duration { return &c.DBIdleTimeout })},
	{group: "Database", name: "DB_STATEMENT_TIMEOUT", def: "30000", help: "ms per statement (0 = none)",
		set: durVar(0, time.Millisecond, func(c *Config) *time.Duration { return &c.DBStatementTimeout })},
	{group: "Database", name: "DB_LOCK_TIMEOUT", def: "10000", help: "ms per lock wait (0 = none)",
		set: durVar(0, time.Millisecond, func(c *Config) *time.Duration { return &c.DBLockTimeout })},
	{group: "Database", name: "PUSH_CONCURRENCY", def: "0", shown: "0 (= the CPU count, at least 2)",
		help: "concurrent database calls for pushes; concurrent push requests are coalesced into them (queen-go's own)",
		set:  intVar(0, 1024, func(c *Config) *int { return &c.PushConcurrency })},
	{group: "Database", name: "CONSUME_CONCURRENCY", def: "0", shown: "0 (= 1 per CPU, at least 2)",
		help: "pops, acks and transactions running in the database at once; more wait in the broker (queen-go's own)",
		set:  intVar(0, 4096, func(c *Config) *int { return &c.ConsumeConcurrency })},
	{group: "Database", name: "PG_BIN_DIR", help: "embedded PostgreSQL: directory of initdb and postgres",
		set: strVar(func(c *Config) *string { return &c.PGBinDir })},
	{group: "Database", name: "DB_REQUEST_TIMEOUT", def: "10000",
		help: "ms the broker allows all the database work of one request, on its own clock",
		set:  durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.DBRequestTimeout })},

	{group: "Pop", name: "DEFAULT_TIMEOUT", def: "30000", help: "ms long-poll timeout when a pop gives none (max 120000)",
		set: durVar(0, time.Millisecond, func(c *Config) *time.Duration { return &c.DefaultTimeout })},
	{group: "Pop", name: "DEFAULT_BATCH_SIZE", def: "1", help: "batch when a pop gives none",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.DefaultBatchSize })},
	{group: "Pop", name: "DEFAULT_SUBSCRIPTION_MODE", shown: `"" (= all)`, help: "all, from_beginning (= all), new or new-only for a named group's first pop",
		set: enumVar([]string{"", "all", "from_beginning", "new", "new-only"}, func(c *Config) *string { return &c.DefaultSubscriptionMode })},
	{group: "Pop", name: "POP_WAIT_INITIAL_INTERVAL_MS", def: "100", help: "first fallback re-check of a parked pop",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.PopWaitInitialInterval })},
	{group: "Pop", name: "POP_WAIT_MAX_INTERVAL_MS", def: "1000", help: "longest fallback interval (max 1000)",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.PopWaitMaxInterval })},

	{group: "File buffer", name: "FILE_BUFFER_DIR", shown: "$QUEEN_DATA_DIR/buffers", help: "spool directory, one per instance",
		set: strVar(func(c *Config) *string { return &c.FileBufferDir })},
	{group: "File buffer", name: "FILE_BUFFER_FLUSH_MS", def: "100", help: "replay tick",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.FileBufferFlushInterval })},
	{group: "File buffer", name: "FILE_BUFFER_MAX_BATCH", def: "100", help: "items per replay transaction",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.FileBufferMaxBatch })},
	{group: "File buffer", name: "FILE_BUFFER_EVENTS_PER_FILE", def: "10000", help: "items per spool file",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.FileBufferEventsPerFile })},

	{group: "Encryption", name: "QUEEN_ENCRYPTION_KEY", help: "64 hex characters (AES-256)",
		set: keyVar},

	{group: "Background jobs", name: "RETENTION_INTERVAL", def: "300000", help: "ms between retention runs",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.RetentionInterval })},
	{group: "Background jobs", name: "RETENTION_BATCH_SIZE", def: "1000", help: "rows per retention statement",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.RetentionBatchSize })},
	{group: "Background jobs", name: "PARTITION_CLEANUP_DAYS", def: "30", help: "days before idle empty partitions go",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.PartitionCleanupDays })},
	{group: "Background jobs", name: "METRICS_RETENTION_DAYS", def: "90", help: "days of metrics and retention history",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.MetricsRetentionDays })},
	{group: "Background jobs", name: "EVICTION_INTERVAL", def: "60000", help: "ms between eviction runs",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.EvictionInterval })},
	{group: "Background jobs", name: "EVICTION_BATCH_SIZE", def: "1000", help: "messages per eviction statement",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.EvictionBatchSize })},
	{group: "Background jobs", name: "LEASE_HOUSEKEEPING_INTERVAL_MS", def: "1000", help: "ms between lease housekeeping runs",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.LeaseHousekeepingInterval })},
	{group: "Background jobs", name: "STATS_INTERVAL_MS", def: "10000", help: "ms between stats computations",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.StatsInterval })},
	{group: "Background jobs", name: "STATS_HISTORY_RETENTION_DAYS", def: "7", help: "days of stats history",
		set: intVar(1, math.MaxInt32, func(c *Config) *int { return &c.StatsHistoryRetentionDays })},
	{group: "Background jobs", name: "METRICS_SAMPLE_INTERVAL_MS", def: "1000", help: "ms between metric samples",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.MetricsSampleInterval })},
	{group: "Background jobs", name: "METRICS_AGGREGATE_INTERVAL_S", def: "60", help: "s between metric flushes",
		set: durVar(1, time.Second, func(c *Config) *time.Duration { return &c.MetricsAggregateInterval })},
	{group: "Background jobs", name: "XMIN_WARN_SECONDS", def: "300", help: "s a database snapshot may be held before the broker warns",
		set: durVar(1, time.Second, func(c *Config) *time.Duration { return &c.XminWarn })},
	{group: "Background jobs", name: "HOT_COMPACTION", def: "auto", help: "auto or off: rewrite the hot tables under a held snapshot",
		set: enumVar([]string{"auto", "off"}, func(c *Config) *string { return &c.HotCompaction })},

	{group: "Authentication", name: "JWT_ENABLED", def: "false", help: "turn authentication on",
		set: boolVar(func(c *Config) *bool { return &c.JWTEnabled })},
	{group: "Authentication", name: "JWT_ALGORITHM", def: "HS256", help: "HS256, RS256, RS384, RS512, EdDSA or auto",
		set: enumVar([]string{"HS256", "RS256", "RS384", "RS512", "EdDSA", "auto"}, func(c *Config) *string { return &c.JWTAlgorithm })},
	{group: "Authentication", name: "JWT_SECRET", shown: `""`, help: "HS256 shared secret",
		set: strVar(func(c *Config) *string { return &c.JWTSecret })},
	{group: "Authentication", name: "JWT_JWKS_URL", shown: `""`, help: "JWKS endpoint for RS*/EdDSA keys",
		set: strVar(func(c *Config) *string { return &c.JWTJWKSURL })},
	{group: "Authentication", name: "JWT_PUBLIC_KEY", shown: `""`, help: "PEM public key for RS*/EdDSA",
		set: strVar(func(c *Config) *string { return &c.JWTPublicKey })},
	{group: "Authentication", name: "JWT_ISSUER", shown: `""`, help: "required iss when set",
		set: strVar(func(c *Config) *string { return &c.JWTIssuer })},
	{group: "Authentication", name: "JWT_AUDIENCE", shown: `""`, help: "required aud when set",
		set: strVar(func(c *Config) *string { return &c.JWTAudience })},
	{group: "Authentication", name: "JWT_CLOCK_SKEW", def: "30", help: "s of tolerance on exp/nbf",
		set: durVar(0, time.Second, func(c *Config) *time.Duration { return &c.JWTClockSkew })},
	{group: "Authentication", name: "JWT_SKIP_PATHS", def: "/health,/metrics/prometheus,/metrics,/", help: "comma-separated paths without authentication",
		set: listVar(func(c *Config) *[]string { return &c.JWTSkipPaths })},
	{group: "Authentication", name: "JWT_JWKS_REFRESH_INTERVAL", def: "3600", help: "s between JWKS refreshes",
		set: durVar(1, time.Second, func(c *Config) *time.Duration { return &c.JWTJWKSRefreshInterval })},
	{group: "Authentication", name: "JWT_JWKS_TIMEOUT_MS", def: "5000", help: "JWKS fetch timeout",
		set: durVar(1, time.Millisecond, func(c *Config) *time.Duration { return &c.JWTJWKSTimeout })},
	{group: "Authentication", name: "JWT_ROLES_CLAIM", def: "role", help: "claim holding one role",
		set: strVar(func(c *Config) *string { return &c.JWTRolesClaim })},
	{group: "Authentication", name: "JWT_ROLES_ARRAY_CLAIM", def: "roles", help: "claim holding several roles",
		set: strVar(func(c *Config) *string { return &c.JWTRolesArrayClaim })},
	{group: "Authentication", name: "JWT_ROLE_ADMIN", def: "admin", help: "role name of the admin level",
		set: strVar(func(c *Config) *string { return &c.JWTRoleAdmin })},
	{group: "Authentication", name: "JWT_ROLE_READ_WRITE", def: "read-write", help: "role name of the read-write level",
		set: strVar(func(c *Config) *string { return &c.JWTRoleReadWrite })},
	{group: "Authentication", name: "JWT_ROLE_READ_ONLY", def: "read-only", help: "role name of the read-only level",
		set: strVar(func(c *Config) *string { return &c.JWTRoleReadOnly })},
	{group: "Authentication", name: "JWT_TENANT_CLAIM", def: "tenant", help: "claim naming the caller's tenant",
		set: strVar(func(c *Config) *string { return &c.JWTTenantClaim })},
	{group: "Authentication", name: "JWT_ROLE_OPERATOR", def: "operator", help: "role that reads every tenant and writes nothing",
		set: strVar(func(c *Config) *string { return &c.JWTRoleOperator })},
}

func strVar(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, raw string) error {
		*field(c) = raw
		return nil
	}
}

// parseInt accepts decimal digits with an optional minus sign and nothing
// else, so "0x10", "1e3" and " 5" are rejected rather than half-understood.
func parseInt(raw string, lo, hi int64) (int64, error) {
	digits := strings.TrimPrefix(raw, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal integer", raw)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s is out of range %d..%d", raw, lo, hi)
	}
	return n, nil
}

func intVar(lo, hi int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, raw string) error {
		n, err := parseInt(raw, int64(lo), int64(hi))
		*field(c) = int(n)
		return err
	}
}

// durVar reads an integer count of unit, the unit being part of the
// variable's documented meaning.
func durVar(lo int64, unit time.Duration, field func(*Config) *time.Duration) func(*Config, string) error {
	hi := math.MaxInt64 / int64(unit)
	return func(c *Config, raw string) error {
		n, err := parseInt(raw, lo, hi)
		*field(c) = time.Duration(n) * unit
		return err
	}
}

func boolVar(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, raw string) error {
		switch strings.ToLower(raw) {
		case "true", "1":
			*field(c) = true
		case "false", "0":
			*field(c) = false
		default:
			return fmt.Errorf("%q is not a boolean (true, 1, false or 0)", raw)
		}
		return nil
	}
}

// enumVar matches case-insensitively but stores the canonical spelling, so
// the rest of the broker compares against one form only.
func enumVar(allowed []string, field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, raw string) error {
		for _, a := range allowed {
			if strings.EqualFold(raw, a) {
				*field(c) = a
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", raw, strings.Join(quoteAll(allowed), ", "))
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func listVar(field func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, raw string) error {
		var out []string
		for p := range strings.SplitSeq(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*field(c) = out
		return nil
	}
}

// originsVar reads CORS_ALLOWED_ORIGINS: "*" or origins as a browser sends them in Origin
// (scheme, host and an optional port, nothing else), stored lower-case without a trailing
// slash, so the broker compares each request's Origin with one spelling. A path or a typo
// stops the broker at startup: a list that silently matched nothing would refuse the page
// the operator meant to allow.
func originsVar(c *Config, raw string) error {
	if err := listVar(func(c *Config) *[]string { return &c.CORSAllowedOrigins })(c, raw); err != nil {
		return err
	}
	for i, o := range c.CORSAllowedOrigins {
		if o == "*" {
			continue
		}
		norm, ok := NormalizeOrigin(strings.TrimSuffix(o, "/"))
		if !ok {
			return fmt.Errorf("%q is not an origin (scheme://host[:port], e.g. https://app.example.com) or *", o)
		}
		c.CORSAllowedOrigins[i] = norm
	}
	return nil
}

// NormalizeOrigin returns the lower-case form of a Web origin ("http://host", "https://host:8443")
// and whether o is one: http or https, a host, an optional port, and no user, path, query or
// fragment. The broker compares request Origin headers in this form.
func NormalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(u.Host, ":") {
		return "", false
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", false
		}
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// hostsVar reads ALLOWED_HOSTS: names without ports, "*", or ".example.com" for a domain and
// its subdomains, stored lower-case.
func hostsVar(c *Config, raw string) error {
	if err := listVar(func(c *Config) *[]string { return &c.AllowedHosts })(c, raw); err != nil {
		return err
	}
	for i, h := range c.AllowedHosts {
		if h != "*" && (strings.ContainsAny(h, ":/@ ") || strings.Trim(h, ".") == "") {
			return fmt.Errorf("%q is not a host name (no port or scheme; .example.com for subdomains, * for any)", h)
		}
		c.AllowedHosts[i] = strings.ToLower(h)
	}
	return nil
}

// schemaVar restricts the schema to names PostgreSQL keeps as written when
// unquoted, so no caller has to worry about quoting or case folding.
func schemaVar(c *Config, raw string) error {
	ok := len(raw) <= 63 && raw != "" && (raw[0] < '0' || raw[0] > '9')
	for i := 0; ok && i < len(raw); i++ {
		ch := raw[i]
		ok = ch == '_' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9'
	}
	if !ok {
		return fmt.Errorf("%q must be 1 to 63 lower-case letters, digits or underscores, not starting with a digit", raw)
	}
	c.DBSchema = raw
	return nil
}

// keyVar checks the key now, so a typo stops the broker at startup instead of
// failing the first encrypted push.
func keyVar(c *Config, raw string) error {
	if raw != "" {
		if b, err := hex.DecodeString(raw); err != nil || len(b) != 32 {
			return fmt.Errorf("must be 64 hex characters (a 256-bit key)")
		}
	}
	c.EncryptionKey = raw
	return nil
}
