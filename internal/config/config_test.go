package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := Config{
		Port: 6632, Host: "0.0.0.0", WorkerID: host, LogLevel: "info", DataDir: "./queen-data", DashboardEnabled: true,
		HTTPIdleTimeout: time.Minute, HTTPReadTimeout: time.Minute, MaxInflightBodyBytes: 512 << 20, LogFormat: "text",
		PGHost: "localhost", PGPort: 5432, PGDB: "postgres", PGUser: "postgres", PGPassword: "postgres",
		PGSSLRejectUnauthorized: true, DBSchema: "queen_go", DBPoolSize: 50, DatabasePooler: "none",
		DBConnectionTimeout: 2 * time.Second, DBIdleTimeout: 30 * time.Second,
		DBStatementTimeout: 30 * time.Second, DBLockTimeout: 10 * time.Second, DBRequestTimeout: 10 * time.Second,
		DefaultTimeout: 30 * time.Second, DefaultBatchSize: 1,
		PopWaitInitialInterval: 100 * time.Millisecond, PopWaitMaxInterval: time.Second,
		FileBufferDir: filepath.Join("queen-data", "buffers"), FileBufferFlushInterval: 100 * time.Millisecond,
		FileBufferMaxBatch: 100, FileBufferEventsPerFile: 10000,
		RetentionInterval: 5 * time.Minute, RetentionBatchSize: 1000, PartitionCleanupDays: 30,
		MetricsRetentionDays: 90, EvictionInterval: time.Minute, EvictionBatchSize: 1000,
		LeaseHousekeepingInterval: time.Second, StatsInterval: 10 * time.Second,
		StatsHistoryRetentionDays: 7, MetricsSampleInterval: time.Second, XminWarn: 5 * time.Minute, MetricsAggregateInterval: time.Minute,
		HotCompaction: "auto", JWTAlgorithm: "HS256", JWTClockSkew: 30 * time.Second,
		JWTSkipPaths:           []string{"/health", "/metrics/prometheus", "/metrics", "/"},
		JWTJWKSRefreshInterval: time.Hour, JWTJWKSTimeout: 5 * time.Second,
		JWTRolesClaim: "role", JWTRolesArrayClaim: "roles", JWTRoleAdmin: "admin",
		JWTRoleReadWrite: "read-write", JWTRoleReadOnly: "read-only", JWTTenantClaim: "tenant",
		JWTRoleOperator: "operator",
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if dsn, embedded := c.Database(); !embedded || dsn != "" {
		t.Errorf("Database() = %q, %v; want embedded", dsn, embedded)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(Config) bool
		wantErr string // substring; "" = must succeed
	}{
		{"port from env", nil, map[string]string{"PORT": "7000"}, func(c Config) bool { return c.Port == 7000 }, ""},
		{"empty env is default", nil, map[string]string{"PORT": "", "LOG_LEVEL": ""}, func(c Config) bool { return c.Port == 6632 && c.LogLevel == "info" }, ""},
		{"flag beats env", []string{"--port", "7001", "--host=127.0.0.1"}, map[string]string{"PORT": "7000", "HOST": "::"},
			func(c Config) bool { return c.Port == 7001 && c.Host == "127.0.0.1" }, ""},
		{"single-dash flag", []string{"-port=7002"}, nil, func(c Config) bool { return c.Port == 7002 }, ""},
		{"flag hides bad env", []string{"--port", "1"}, map[string]string{"PORT": "x"}, func(c Config) bool { return c.Port == 1 }, ""},
		{"bad port flag", []string{"--port", "x"}, nil, nil, `--port: "x" is not a decimal integer`},
		{"bad port env", nil, map[string]string{"PORT": "66000"}, nil, "PORT: 66000 is out of range 0..65535"},
		{"port with spaces", nil, map[string]string{"PORT": " 80"}, nil, `PORT: " 80" is not a decimal integer`},
		{"hex int", nil, map[string]string{"DB_POOL_SIZE": "0x10"}, nil, "DB_POOL_SIZE"},
		{"pool size zero", nil, map[string]string{"DB_POOL_SIZE": "0"}, nil, "DB_POOL_SIZE: 0 is out of range"},
		{"push concurrency", nil, map[string]string{"PUSH_CONCURRENCY": "4"}, func(c Config) bool { return c.PushConcurrency == 4 }, ""},
		{"push concurrency negative", nil, map[string]string{"PUSH_CONCURRENCY": "-1"}, nil, "PUSH_CONCURRENCY: -1 is out of range"},
		{"huge int", nil, map[string]string{"RETENTION_BATCH_SIZE": "99999999999999999999"}, nil, "RETENTION_BATCH_SIZE"},
		{"negative duration", nil, map[string]string{"DB_LOCK_TIMEOUT": "-1"}, nil, "DB_LOCK_TIMEOUT"},
		{"zero statement timeout", nil, map[string]string{"DB_STATEMENT_TIMEOUT": "0"}, func(c Config) bool { return c.DBStatementTimeout == 0 }, ""},
		{"dev", []string{"--dev"}, map[string]string{"LOG_LEVEL": "error"}, func(c Config) bool { return c.Dev && c.LogLevel == "debug" }, ""},
		{"dev hides bad LOG_LEVEL", []string{"--dev"}, map[string]string{"LOG_LEVEL": "loud"}, func(c Config) bool { return c.LogLevel == "debug" }, ""},
		{"dev=false", []string{"--dev=false"}, map[string]string{"LOG_LEVEL": "warn"}, func(c Config) bool { return !c.Dev && c.LogLevel == "warn" }, ""},
		{"log level case", nil, map[string]string{"LOG_LEVEL": "WARN"}, func(c Config) bool { return c.LogLevel == "warn" }, ""},
		{"bad log level", nil, map[string]string{"LOG_LEVEL": "verbose"}, nil, "LOG_LEVEL"},
		{"log format json", nil, map[string]string{"LOG_FORMAT": "JSON"}, func(c Config) bool { return c.LogFormat == "json" }, ""},
		{"log format text", nil, map[string]string{"LOG_FORMAT": "text"}, func(c Config) bool { return c.LogFormat == "text" }, ""},
		{"bad log format", nil, map[string]string{"LOG_FORMAT": "logfmt"}, nil, `LOG_FORMAT: "logfmt" is not one of "text", "json"`},
		{"access log", nil, map[string]string{"ACCESS_LOG": "true"}, func(c Config) bool { return c.AccessLog }, ""},
		{"tracing off by default", nil, nil, func(c Config) bool { return !c.TracingEnabled() }, ""},
		{"otlp endpoint", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			func(c Config) bool { return c.OTLPEndpoint == "http://c:4318" && c.TracingEnabled() }, ""},
		{"otlp traces endpoint", nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"},
			func(c Config) bool { return c.TracingEnabled() }, ""},
		{"version", []string{"--version"}, map[string]string{"PORT": "bad"}, func(c Config) bool { return c.ShowVersion && !c.ShowHelp }, ""},
		{"help", []string{"--help"}, map[string]string{"PORT": "bad"}, func(c Config) bool { return c.ShowHelp }, ""},
		{"-h", []string{"-h"}, nil, func(c Config) bool { return c.ShowHelp }, ""},
		{"unknown flag", []string{"--nope"}, nil, nil, "flag provided but not defined"},
		{"stray argument", []string{"serve"}, nil, nil, `unexpected argument "serve"`},
		{"bool forms", nil, map[string]string{"PG_USE_SSL": "TRUE", "PG_SSL_REJECT_UNAUTHORIZED": "0", "JWT_ENABLED": "1", "JWT_SECRET": "s"},
			func(c Config) bool { return c.PGUseSSL && !c.PGSSLRejectUnauthorized && c.JWTEnabled }, ""},
		{"bool False", nil, map[string]string{"PG_SSL_REJECT_UNAUTHORIZED": "False"}, func(c Config) bool { return !c.PGSSLRejectUnauthorized }, ""},
		{"bad bool", nil, map[string]string{"PG_USE_SSL": "yes"}, nil, `PG_USE_SSL: "yes" is not a boolean`},
		{"subscription modes", nil, map[string]string{"DEFAULT_SUBSCRIPTION_MODE": "new-only"}, func(c Config) bool { return c.DefaultSubscriptionMode == "new-only" }, ""},
		{"subscription from_beginning", nil, map[string]string{"DEFAULT_SUBSCRIPTION_MODE": "from_beginning"}, func(c Config) bool { return c.DefaultSubscriptionMode == "from_beginning" }, ""},
		{"subscription all", nil, map[string]string{"DEFAULT_SUBSCRIPTION_MODE": "all"}, func(c Config) bool { return c.DefaultSubscriptionMode == "all" }, ""},
		{"bad subscription", nil, map[string]string{"DEFAULT_SUBSCRIPTION_MODE": "latest"}, nil, "DEFAULT_SUBSCRIPTION_MODE"},
		{"hot compaction off", nil, map[string]string{"HOT_COMPACTION": "OFF"}, func(c Config) bool { return c.HotCompaction == "off" }, ""},
		{"bad hot compaction", nil, map[string]string{"HOT_COMPACTION": "always"}, nil, "HOT_COMPACTION"},
		{"pop wait cap", nil, map[string]string{"POP_WAIT_MAX_INTERVAL_MS": "5000", "POP_WAIT_INITIAL_INTERVAL_MS": "3000"},
			func(c Config) bool {
				return c.PopWaitMaxInterval == time.Second && c.PopWaitInitialInterval == time.Second
			}, ""},
		{"default timeout cap", nil, map[string]string{"DEFAULT_TIMEOUT": "500000"}, func(c Config) bool { return c.DefaultTimeout == 120*time.Second }, ""},
		{"seconds unit", nil, map[string]string{"METRICS_AGGREGATE_INTERVAL_S": "5", "JWT_CLOCK_SKEW": "0"},
			func(c Config) bool { return c.MetricsAggregateInterval == 5*time.Second && c.JWTClockSkew == 0 }, ""},
		{"duration overflow", nil, map[string]string{"JWT_JWKS_REFRESH_INTERVAL": "9223372036854775807"}, nil, "JWT_JWKS_REFRESH_INTERVAL"},
		{"spool dir follows data dir", nil, map[string]string{"QUEEN_DATA_DIR": "/var/q"}, func(c Config) bool { return c.FileBufferDir == "/var/q/buffers" }, ""},
		{"spool dir explicit", nil, map[string]string{"QUEEN_DATA_DIR": "/var/q", "FILE_BUFFER_DIR": "/spool"}, func(c Config) bool { return c.FileBufferDir == "/spool" }, ""},
		{"worker id", nil, map[string]string{"WORKER_ID": "w-1"}, func(c Config) bool { return c.WorkerID == "w-1" }, ""},
		{"schema", nil, map[string]string{"DB_SCHEMA": "queen_2"}, func(c Config) bool { return c.DBSchema == "queen_2" }, ""},
		{"schema upper", nil, map[string]string{"DB_SCHEMA": "Queen"}, nil, "DB_SCHEMA"},
		{"schema injection", nil, map[string]string{"DB_SCHEMA": "q; drop"}, nil, "DB_SCHEMA"},
		{"key", nil, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("aB", 32)}, func(c Config) bool { return len(c.EncryptionKey) == 64 }, ""},
		{"short key", nil, map[string]string{"QUEEN_ENCRYPTION_KEY": "abcd"}, nil, "QUEEN_ENCRYPTION_KEY"},
		{"non-hex key", nil, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("zz", 32)}, nil, "QUEEN_ENCRYPTION_KEY"},
		{"skip paths", nil, map[string]string{"JWT_SKIP_PATHS": " /a , ,/b/ "}, func(c Config) bool { return reflect.DeepEqual(c.JWTSkipPaths, []string{"/a", "/b/"}) }, ""},
		{"algorithm canonical", nil, map[string]string{"JWT_ALGORITHM": "eddsa"}, func(c Config) bool { return c.JWTAlgorithm == "EdDSA" }, ""},
		{"bad algorithm", nil, map[string]string{"JWT_ALGORITHM": "none"}, nil, "JWT_ALGORITHM"},
		{"jwt hs256 without secret", nil, map[string]string{"JWT_ENABLED": "true"}, nil, "JWT_SECRET"},
		{"jwt rs256 without key", nil, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_SECRET": "s"}, nil, "JWT_PUBLIC_KEY"},
		{"jwt rs256 jwks", nil, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_JWKS_URL": "http://x"}, func(c Config) bool { return c.JWTEnabled }, ""},
		{"jwt auto without anything", nil, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "auto"}, nil, "JWT_ENABLED"},
		{"jwt auto with secret", nil, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "auto", "JWT_SECRET": "s"}, func(c Config) bool { return c.JWTAlgorithm == "auto" }, ""},
		{"jwt off needs no key", nil, map[string]string{"JWT_ALGORITHM": "RS512"}, func(c Config) bool { return !c.JWTEnabled }, ""},
		{"obsolete variables ignored", nil, map[string]string{"NUM_WORKERS": "x", "SIDECAR_POOL_SIZE": "y", "QUEEN_UDP_PORT": "z", "DB_KEEPALIVES_IDLE": "?"},
			func(c Config) bool { return c.Port == 6632 }, ""},
		{"http timeouts", nil, map[string]string{"HTTP_IDLE_TIMEOUT": "300", "HTTP_READ_TIMEOUT": "1500"},
			func(c Config) bool {
				return c.HTTPIdleTimeout == 300*time.Millisecond && c.HTTPReadTimeout == 1500*time.Millisecond
			}, ""},
		{"zero idle timeout", nil, map[string]string{"HTTP_IDLE_TIMEOUT": "0"}, nil, "HTTP_IDLE_TIMEOUT: 0 is out of range"},
		{"zero read timeout", nil, map[string]string{"HTTP_READ_TIMEOUT": "0"}, nil, "HTTP_READ_TIMEOUT: 0 is out of range"},
		{"inflight body budget", nil, map[string]string{"QUEEN_MAX_INFLIGHT_BODY_BYTES": "67108864"},
			func(c Config) bool { return c.MaxInflightBodyBytes == 64<<20 }, ""},
		{"inflight body budget below one body", nil, map[string]string{"QUEEN_MAX_INFLIGHT_BODY_BYTES": "67108863"}, nil,
			"QUEEN_MAX_INFLIGHT_BODY_BYTES: 67108863 is out of range"},
		{"inflight body budget not a number", nil, map[string]string{"QUEEN_MAX_INFLIGHT_BODY_BYTES": "512MiB"}, nil,
			"QUEEN_MAX_INFLIGHT_BODY_BYTES"},
		{"pg configured", nil, map[string]string{"PG_DB": "q"}, func(c Config) bool { return c.PGConfigured && c.PGDB == "q" }, ""},
		{"cors origins", nil, map[string]string{"CORS_ALLOWED_ORIGINS": " https://App.Example.com/ , http://localhost:3000,*"},
			func(c Config) bool {
				return slices.Equal(c.CORSAllowedOrigins, []string{"https://app.example.com", "http://localhost:3000", "*"})
			}, ""},
		{"cors origin with a path", nil, map[string]string{"CORS_ALLOWED_ORIGINS": "https://app.example.com/ui"}, nil,
			`CORS_ALLOWED_ORIGINS: "https://app.example.com/ui" is not an origin`},
		{"cors origin without a scheme", nil, map[string]string{"CORS_ALLOWED_ORIGINS": "app.example.com"}, nil,
			`CORS_ALLOWED_ORIGINS: "app.example.com" is not an origin`},
		{"cors origin with a bad port", nil, map[string]string{"CORS_ALLOWED_ORIGINS": "http://a:99999"}, nil, "is not an origin"},
		{"allowed hosts", nil, map[string]string{"ALLOWED_HOSTS": "Queen.Internal, .svc.example"},
			func(c Config) bool { return slices.Equal(c.AllowedHosts, []string{"queen.internal", ".svc.example"}) }, ""},
		{"allowed host with a port", nil, map[string]string{"ALLOWED_HOSTS": "queen.internal:6632"}, nil,
			`ALLOWED_HOSTS: "queen.internal:6632" is not a host name`},
		{"pg ssl alone is not configured", nil, map[string]string{"PG_USE_SSL": "true"}, func(c Config) bool { return !c.PGConfigured }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("unexpected config %+v", c)
			}
		})
	}
}

func TestErrorsDoNotLeakSecrets(t *testing.T) {
	secret := strings.Repeat("f", 63) + "x"
	_, err := Load(nil, env(map[string]string{"QUEEN_ENCRYPTION_KEY": secret}))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("err = %v", err)
	}
}

func TestDatabase(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantDSN      string
		wantEmbedded bool
	}{
		{"nothing set", nil, "", true},
		{"url wins", map[string]string{"DATABASE_URL": "postgres://u@h/db", "PG_HOST": "other"}, "postgres://u@h/db", false},
		{"multi-host url kept whole", map[string]string{"DATABASE_URL": "postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write"},
			"postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write", false},
		{"pg host only", map[string]string{"PG_HOST": "db.example"},
			"host=db.example port=5432 dbname=postgres user=postgres password=postgres sslmode=disable", false},
		{"pg port only", map[string]string{"PG_PORT": "6543"},
			"host=localhost port=6543 dbname=postgres user=postgres password=postgres sslmode=disable", false},
		{"ssl verify", map[string]string{"PG_USER": "u", "PG_USE_SSL": "true"},
			"host=localhost port=5432 dbname=postgres user=u password=postgres sslmode=verify-full", false},
		{"ssl no verify", map[string]string{"PG_PASSWORD": "p", "PG_USE_SSL": "1", "PG_SSL_REJECT_UNAUTHORIZED": "false"},
			"host=localhost port=5432 dbname=postgres user=postgres password=p sslmode=require", false},
		{"quoting", map[string]string{"PG_HOST": "/var/run/postgresql", "PG_PASSWORD": `it's a \secret`},
			`host=/var/run/postgresql port=5432 dbname=postgres user=postgres password='it\'s a \\secret' sslmode=disable`, false},
		{"ssl settings alone stay embedded", map[string]string{"PG_USE_SSL": "true"}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(nil, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			dsn, embedded := c.Database()
			if dsn != tc.wantDSN || embedded != tc.wantEmbedded {
				t.Errorf("Database() = %q, %v\nwant %q, %v", dsn, embedded, tc.wantDSN, tc.wantEmbedded)
			}
		})
	}
}

func TestSlogLevel(t *testing.T) {
	tests := []struct {
		args []string
		env  string
		want slog.Level
	}{
		{nil, "", slog.LevelInfo},
		{nil, "trace", slog.LevelDebug},
		{nil, "debug", slog.LevelDebug},
		{nil, "info", slog.LevelInfo},
		{nil, "warn", slog.LevelWarn},
		{nil, "error", slog.LevelError},
		{[]string{"--dev"}, "error", slog.LevelDebug},
	}
	for _, tc := range tests {
		c, err := Load(tc.args, env(map[string]string{"LOG_LEVEL": tc.env}))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.SlogLevel(); got != tc.want {
			t.Errorf("%v LOG_LEVEL=%q: %v, want %v", tc.args, tc.env, got, tc.want)
		}
	}
}

func TestUsageListsEverything(t *testing.T) {
	u := Usage()
	for _, f := range []string{"--port", "--host", "--dev", "--version", "--help"} {
		if !strings.Contains(u, f) {
			t.Errorf("Usage lacks %s", f)
		}
	}
	for _, v := range variables {
		if !strings.Contains(u, v.name) {
			t.Errorf("Usage lacks %s", v.name)
		}
	}
	for _, line := range strings.Split(u, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing space: %q", line)
		}
	}
}

// TestSpecVariablesCovered guards against a variable of docs/api/operations.md §1.3
// being dropped from the table.
func TestSpecVariablesCovered(t *testing.T) {
	spec := strings.Fields(`PORT HOST WORKER_ID LOG_LEVEL QUEEN_DATA_DIR WEBAPP_ROOT DASHBOARD_ENABLED DATABASE_URL PG_HOST PG_PORT
		PG_DB PG_USER PG_PASSWORD PG_USE_SSL PG_SSL_REJECT_UNAUTHORIZED DB_SCHEMA DB_POOL_SIZE DB_CONNECTION_TIMEOUT
		DB_IDLE_TIMEOUT DB_STATEMENT_TIMEOUT DB_LOCK_TIMEOUT PG_BIN_DIR DB_REQUEST_TIMEOUT DEFAULT_TIMEOUT DEFAULT_BATCH_SIZE
		DEFAULT_SUBSCRIPTION_MODE POP_WAIT_INITIAL_INTERVAL_MS POP_WAIT_MAX_INTERVAL_MS FILE_BUFFER_DIR
		FILE_BUFFER_FLUSH_MS FILE_BUFFER_MAX_BATCH FILE_BUFFER_EVENTS_PER_FILE QUEEN_ENCRYPTION_KEY
		RETENTION_INTERVAL RETENTION_BATCH_SIZE PARTITION_CLEANUP_DAYS METRICS_RETENTION_DAYS EVICTION_INTERVAL
		EVICTION_BATCH_SIZE LEASE_HOUSEKEEPING_INTERVAL_MS STATS_INTERVAL_MS STATS_HISTORY_RETENTION_DAYS
		METRICS_SAMPLE_INTERVAL_MS METRICS_AGGREGATE_INTERVAL_S JWT_ENABLED JWT_ALGORITHM JWT_SECRET JWT_JWKS_URL
		JWT_PUBLIC_KEY JWT_ISSUER JWT_AUDIENCE JWT_CLOCK_SKEW JWT_SKIP_PATHS JWT_JWKS_REFRESH_INTERVAL
		JWT_JWKS_TIMEOUT_MS JWT_ROLES_CLAIM JWT_ROLES_ARRAY_CLAIM JWT_ROLE_ADMIN JWT_ROLE_READ_WRITE
		JWT_ROLE_READ_ONLY JWT_TENANT_CLAIM
		HTTP_IDLE_TIMEOUT HTTP_READ_TIMEOUT QUEEN_MAX_INFLIGHT_BODY_BYTES`)
	ours := []string{"PPROF_ADDR", "PUSH_CONCURRENCY", "CONSUME_CONCURRENCY", "XMIN_WARN_SECONDS", "HOT_COMPACTION", // queen-go's own additions, not in the API reference
		"LOG_FORMAT", "ACCESS_LOG", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"CORS_ALLOWED_ORIGINS", "ALLOWED_HOSTS", "DATABASE_POOLER", "DATABASE_SESSION_URL",
		"JWT_ROLE_OPERATOR"}
	have := map[string]bool{}
	for _, v := range variables {
		if have[v.name] {
			t.Errorf("%s listed twice", v.name)
		}
		have[v.name] = true
	}
	for _, name := range spec {
		if !have[name] {
			t.Errorf("%s missing", name)
		}
	}
	if len(have) != len(spec)+len(ours) {
		t.Errorf("table has %d variables, spec %d plus %d of ours", len(have), len(spec), len(ours))
	}
}

// DATABASE_POOLER and DATABASE_SESSION_URL: a session URL only behind a pooler, and a pooler
// only in front of a database of one's own.
func TestPoolerSettings(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{"DATABASE_URL": "postgres://p:6432/q", "DATABASE_POOLER": "transaction"}, ""},
		{map[string]string{"DATABASE_URL": "postgres://p:6432/q", "DATABASE_POOLER": "Transaction",
			"DATABASE_SESSION_URL": "postgres://db:5432/q"}, ""},
		{map[string]string{"DATABASE_URL": "postgres://db:5432/q", "DATABASE_SESSION_URL": "postgres://db:5432/q"},
			"DATABASE_SESSION_URL is for DATABASE_POOLER=transaction"},
		{map[string]string{"DATABASE_POOLER": "transaction"}, "DATABASE_POOLER=transaction needs DATABASE_URL"},
		{map[string]string{"DATABASE_URL": "postgres://p:6432/q", "DATABASE_POOLER": "session"}, `"session" is not one of`},
	} {
		c2, err := Load(nil, env(c.env))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.wantErr == "" && c2.DatabasePooler != "transaction":
			t.Errorf("%v: pooler %q", c.env, c2.DatabasePooler)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v: error %v; want %q", c.env, err, c.wantErr)
		}
	}
}
