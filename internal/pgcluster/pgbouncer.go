package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PgBouncerOptions configures StartPgBouncer.
type PgBouncerOptions struct {
	// Database is the name clients connect to; default DBName.
	Database string
	// Host, Port and DBName name the server database the pooler connects to; Host defaults to
	// 127.0.0.1.
	Host   string
	Port   int
	DBName string
	// PoolMode is pool_mode; default transaction.
	PoolMode string
	// PoolSize is default_pool_size, the most server connections per database and user;
	// default 5.
	PoolSize int
	// MaxClientConn is max_client_conn; default 200.
	MaxClientConn int
	// Settings are further [pgbouncer] settings; they win over this package's defaults.
	Settings map[string]string
}

// PgBouncer is a running PgBouncer started by this package.
type PgBouncer struct {
	// Port is its TCP port on Host.
	Port int
	// Database is the name clients connect to.
	Database string
	// PoolSize is its default_pool_size.
	PoolSize int

	dir  string
	acct *account
	proc *process
}

// StartPgBouncer writes a pgbouncer.ini and runs Debian's pgbouncer on a free port of
// 127.0.0.1 (as postgres when the test runs as root: PgBouncer refuses root). Clients are
// trusted when the auth_file lists them (postgres is listed); postgres is also an admin of the
// console (database pgbouncer: SHOW POOLS, SHOW SERVERS). It returns once the pooler accepts.
func StartPgBouncer(ctx context.Context, o PgBouncerOptions) (*PgBouncer, error) {
	if _, err := os.Stat(PgBouncerPath); err != nil {
		return nil, fmt.Errorf("pgcluster: no %s (%v); install the Debian package pgbouncer (apt-get install pgbouncer)", PgBouncerPath, err)
	}
	if o.Database == "" {
		o.Database = o.DBName
	}
	if o.Database == "" || o.Port == 0 {
		return nil, errors.New("pgcluster: StartPgBouncer needs a database name and a server port")
	}
	if o.Host == "" {
		o.Host = Host
	}
	if o.PoolMode == "" {
		o.PoolMode = "transaction"
	}
	if o.PoolSize == 0 {
		o.PoolSize = 5
	}
	if o.MaxClientConn == 0 {
		o.MaxClientConn = 200
	}
	a, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(a, "pgbouncer")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	b := &PgBouncer{Database: o.Database, PoolSize: o.PoolSize, dir: dir, acct: a}
	for range startRetries {
		if err = b.startOnce(ctx, o); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

func (b *PgBouncer) startOnce(ctx context.Context, o PgBouncerOptions) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	settings := map[string]string{
		"listen_addr":               Host,
		"listen_port":               strconv.Itoa(port),
		"unix_socket_dir":           "",
		"auth_type":                 "trust",
		"auth_file":                 filepath.Join(b.dir, "userlist.txt"),
		"admin_users":               "postgres",
		"pool_mode":                 o.PoolMode,
		"default_pool_size":         strconv.Itoa(o.PoolSize),
		"max_client_conn":           strconv.Itoa(o.MaxClientConn),
		"ignore_startup_parameters": "extra_float_digits",
		"pidfile":                   filepath.Join(b.dir, "pgbouncer.pid"),
		"logfile":                   "",
		"syslog":                    "0",
	}
	for k, v := range o.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ini strings.Builder
	fmt.Fprintf(&ini, "[databases]\n%s = host=%s port=%d dbname=%s\n\n[pgbouncer]\n", o.Database, o.Host, o.Port, o.DBName)
	for _, k := range keys {
		fmt.Fprintf(&ini, "%s = %s\n", k, settings[k])
	}
	files := map[string]string{"pgbouncer.ini": ini.String(), "userlist.txt": "\"postgres\" \"\"\n"}
	for name, content := range files {
		p := filepath.Join(b.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if err := b.acct.chown(p); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
	}
	cmd := execCommand(PgBouncerPath, filepath.Join(b.dir, "pgbouncer.ini"))
	cmd.Dir = b.dir
	// SIGTERM is PgBouncer's immediate shutdown.
	cmd.SysProcAttr = b.acct.attr(syscall.SIGTERM)
	logPath := filepath.Join(b.dir, "pgbouncer.log")
	p, err := launch(cmd, logPath)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	b.proc, b.Port = p, port
	err = poll(ctx, readyTimeout, func(ctx context.Context) error {
		if p.exited() {
			return fmt.Errorf("pgbouncer exited (%v)", p.waitErr)
		}
		_, err := b.Show(ctx, "VERSION")
		return err
	})
	if err != nil {
		p.signal(syscall.SIGTERM, stopTimeout)
		tail := p.logTail(3000)
		if strings.Contains(tail, "Address already in use") {
			return errAddrInUse
		}
		return fmt.Errorf("pgcluster: pgbouncer did not start: %w; its log %s ends with:\n%s", err, logPath, tail)
	}
	return nil
}

// DSN returns the URL connection string clients use to reach the pooled database.
func (b *PgBouncer) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable", Host, b.Port, b.Database)
}

// Addr returns host:port.
func (b *PgBouncer) Addr() string { return fmt.Sprintf("%s:%d", Host, b.Port) }

// Show runs SHOW what (POOLS, SERVERS, CLIENTS, STATS…) on the admin console and returns its
// rows, each as column name → text value. The console speaks only the simple query protocol.
func (b *PgBouncer) Show(ctx context.Context, what string) ([]map[string]string, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s:%d/pgbouncer?sslmode=disable", Host, b.Port))
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SHOW "+what)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		fields := rows.FieldDescriptions()
		row := make(map[string]string, len(fields))
		for i, v := range rows.RawValues() {
			row[fields[i].Name] = string(v)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// ServerConns returns the number of server connections (active, idle, used, tested, login)
// the pooler holds to its database, from SHOW POOLS; the admin console's own pool is left out.
func (b *PgBouncer) ServerConns(ctx context.Context) (int, error) {
	pools, err := b.Show(ctx, "POOLS")
	if err != nil {
		return 0, err
	}
	total := 0
	for _, p := range pools {
		if p["database"] != b.Database {
			continue
		}
		for _, col := range []string{"sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"} {
			n, err := strconv.Atoi(p[col])
			if err != nil {
				return 0, fmt.Errorf("SHOW POOLS %s = %q: %w", col, p[col], err)
			}
			total += n
		}
	}
	return total, nil
}

// Stop shuts the pooler down (SIGTERM, its immediate shutdown) and removes its directory.
// It may be called more than once.
func (b *PgBouncer) Stop() {
	if b.proc != nil {
		b.proc.signal(syscall.SIGTERM, stopTimeout)
	}
	os.RemoveAll(b.dir)
}

// Log returns the end of the pooler's log.
func (b *PgBouncer) Log() string {
	if b.proc == nil {
		return ""
	}
	return b.proc.logTail(8000)
}

// MustPgBouncer is StartPgBouncer for one test: it fails the test on error and stops the
// pooler when the test ends, logging its log first if the test failed.
func MustPgBouncer(t testing.TB, o PgBouncerOptions) *PgBouncer {
	t.Helper()
	b, err := StartPgBouncer(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of pgbouncer (%s):\n%s", b.Addr(), b.Log())
		}
		b.Stop()
	})
	return b
}
