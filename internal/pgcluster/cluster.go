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
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	readyTimeout   = 60 * time.Second
	commandTimeout = 2 * time.Minute
	stopTimeout    = 30 * time.Second
	// Host is the address every server of this package listens on.
	Host = "127.0.0.1"
)

// Options configures StartPrimary.
type Options struct {
	// Name names the cluster in its directory and, for a standby, in application_name;
	// default "primary".
	Name string
	// Logical sets wal_level=logical (for logical replication slots) instead of replica.
	Logical bool
	// Durable keeps fsync=on. By default fsync is off, for speed: the failures these tests
	// cause are process crashes (pg_ctl stop -m immediate, SIGKILL), which lose nothing the
	// kernel already holds, so everything written is still read back, by a restarted server
	// or, through the standby's WAL receiver, by a standby. What fsync adds, survival of a
	// power loss, no test here can cause.
	Durable bool
	// Settings are further postgresql.conf settings (name → value as written in the file,
	// quoted where PostgreSQL wants quotes); they win over this package's defaults.
	Settings map[string]string
}

// Cluster is a running PostgreSQL server started by this package: a primary or a standby.
type Cluster struct {
	// Name is the cluster's name; a standby's application_name.
	Name string
	// Port is its TCP port on Host.
	Port int
	// DataDir is its data directory.
	DataDir string

	dir  string // the temporary directory holding DataDir and the log
	bin  string
	acct *account
	proc *process

	stalled []int // walsenders stopped by StallReplication
}

// defaults are the settings of every cluster: small, quick, replication-ready, and otherwise
// PostgreSQL's own defaults (autovacuum on, as in production).
func defaults(o Options) map[string]string {
	s := map[string]string{
		"listen_addresses":        "'" + Host + "'",
		"unix_socket_directories": "''",
		"max_connections":         "60",
		"shared_buffers":          "16MB",
		"wal_level":               "replica",
		"max_wal_senders":         "8",
		"max_replication_slots":   "8",
		"wal_keep_size":           "128MB",
		"hot_standby":             "on",
		"fsync":                   "off",
		"full_page_writes":        "off",
		"logging_collector":       "off",
		"log_min_messages":        "warning",
		"log_line_prefix":         "'%m [%p] %a '",
		"timezone":                "'UTC'",
	}
	if o.Logical {
		s["wal_level"] = "logical"
	}
	if o.Durable {
		s["fsync"], s["full_page_writes"] = "on", "on"
	}
	for k, v := range o.Settings {
		s[k] = v
	}
	return s
}

// StartPrimary creates a new cluster with initdb and starts it. Every local and 127.0.0.1
// connection, replication included, is trusted; the superuser is postgres.
func StartPrimary(ctx context.Context, o Options) (*Cluster, error) {
	if o.Name == "" {
		o.Name = "primary"
	}
	c, err := newCluster(o.Name)
	if err != nil {
		return nil, err
	}
	if err := run(c.acct, c.dir, commandTimeout, filepath.Join(c.bin, "initdb"),
		"-D", c.DataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		c.remove()
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	hba := "local all all trust\nlocal replication all trust\n" +
		"host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := c.writeFile("pg_hba.conf", hba); err != nil {
		c.remove()
		return nil, err
	}
	if err := c.appendConf("postgresql.conf", defaults(o)); err != nil {
		c.remove()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// StandbyOptions configures StartStandby.
type StandbyOptions struct {
	// Name is the standby's application_name, by which synchronous_standby_names names it;
	// default "standby".
	Name string
	// Slot, when set, makes the standby stream through a physical replication slot of this
	// name, created on the primary (pg_basebackup -C -S).
	Slot string
	// Settings are further postgresql.conf settings of the standby (hot_standby_feedback=on…).
	Settings map[string]string
}

// StartStandby takes a base backup of primary (pg_basebackup -R, WAL streamed) and starts it
// as a streaming hot standby named o.Name. It returns once the standby accepts connections
// and streams from the primary.
func StartStandby(ctx context.Context, primary *Cluster, o StandbyOptions) (*Cluster, error) {
	if o.Name == "" {
		o.Name = "standby"
	}
	c, err := newCluster(o.Name)
	if err != nil {
		return nil, err
	}
	args := []string{"-h", Host, "-p", strconv.Itoa(primary.Port), "-U", "postgres", "-D", c.DataDir,
		"-R", "-X", "stream", "--checkpoint=fast", "--no-sync"}
	if o.Slot != "" {
		args = append(args, "-C", "-S", o.Slot)
	}
	if err := run(c.acct, c.dir, commandTimeout, filepath.Join(c.bin, "pg_basebackup"), args...); err != nil {
		c.remove()
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	// pg_basebackup -R wrote a primary_conninfo without application_name to
	// postgresql.auto.conf, which is read after postgresql.conf; a later line there wins.
	settings := map[string]string{
		"primary_conninfo": quote(fmt.Sprintf("host=%s port=%d user=postgres application_name=%s", Host, primary.Port, o.Name)),
	}
	for k, v := range o.Settings {
		settings[k] = v
	}
	if err := c.appendConf("postgresql.auto.conf", settings); err != nil {
		c.remove()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.remove()
		return nil, err
	}
	if err := c.waitStreaming(ctx, primary); err != nil {
		err = fmt.Errorf("pgcluster: %w; the standby's log ends with:\n%s", err, c.Log())
		c.Stop()
		return nil, err
	}
	return c, nil
}

func newCluster(name string) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	a, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(a, name)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	return &Cluster{Name: name, DataDir: filepath.Join(dir, "data"), dir: dir, bin: bin, acct: a}, nil
}

// start runs postgres on a free port and waits until it accepts connections.
func (c *Cluster) start(ctx context.Context) error {
	var err error
	for range startRetries {
		if err = c.startOnce(ctx); !errors.Is(err, errAddrInUse) {
			return err
		}
	}
	return err
}

func (c *Cluster) startOnce(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	cmd := execCommand(filepath.Join(c.bin, "postgres"), "-D", c.DataDir, "-p", strconv.Itoa(port))
	cmd.Dir = c.dir
	// SIGQUIT is an immediate shutdown: a test process that dies leaves no server behind.
	cmd.SysProcAttr = c.acct.attr(syscall.SIGQUIT)
	logPath := filepath.Join(c.dir, "postgres.log")
	p, err := launch(cmd, logPath)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	c.proc, c.Port = p, port
	if err := c.waitReady(ctx); err != nil {
		p.signal(syscall.SIGQUIT, stopTimeout)
		tail := p.logTail(3000)
		if strings.Contains(tail, "Address already in use") {
			return errAddrInUse
		}
		return fmt.Errorf("pgcluster: %s did not start: %w; its log %s ends with:\n%s", c.Name, err, logPath, tail)
	}
	return nil
}

// waitReady polls until a connection succeeds, the server exits or readyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, c.DSN("postgres"))
		cancelAttempt()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.proc.done:
			return fmt.Errorf("the server exited (%v)", c.proc.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitStreaming waits until primary's pg_stat_replication shows c streaming.
func (c *Cluster) waitStreaming(ctx context.Context, primary *Cluster) error {
	return poll(ctx, readyTimeout, func(ctx context.Context) error {
		var n int
		err := primary.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", c.Name).Scan(&n)
		if err == nil && n == 0 {
			err = fmt.Errorf("standby %s is not streaming from %s", c.Name, primary.Name)
		}
		return err
	})
}

// DSN returns a URL connection string for database db on this cluster.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable", Host, c.Port, db)
}

// Addr returns host:port, as written in a multi-host connection string.
func (c *Cluster) Addr() string { return fmt.Sprintf("%s:%d", Host, c.Port) }

// QueryRow runs one query on the postgres database in a connection of its own.
func (c *Cluster) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return errRow{err}
	}
	return closingRow{conn: conn, row: conn.QueryRow(ctx, sql, args...), ctx: ctx}
}

// Exec runs statements on database db in a connection of its own.
func (c *Cluster) Exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// CreateDatabase creates database name (on a primary; a standby receives it by replication).
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	return c.Exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// SetSynchronous makes the named standbys synchronous for c (synchronous_standby_names lists
// them, FIRST n with n = len(standbys); synchronous_commit=on), reloads the configuration and
// waits until pg_stat_replication reports each standby as sync. With none it makes
// replication asynchronous again.
func (c *Cluster) SetSynchronous(ctx context.Context, standbys ...*Cluster) error {
	names := make([]string, len(standbys))
	for i, s := range standbys {
		names[i] = pgx.Identifier{s.Name}.Sanitize()
	}
	value := ""
	if len(names) > 0 {
		value = fmt.Sprintf("FIRST %d (%s)", len(names), strings.Join(names, ", "))
	}
	for _, stmt := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = " + quote(value),
		"ALTER SYSTEM SET synchronous_commit = 'on'",
		"SELECT pg_reload_conf()",
	} {
		if err := c.Exec(ctx, "postgres", stmt); err != nil {
			return fmt.Errorf("pgcluster: %s: %w", stmt, err)
		}
	}
	for _, s := range standbys {
		err := poll(ctx, readyTimeout, func(ctx context.Context) error {
			var state string
			err := c.QueryRow(ctx, "SELECT coalesce(max(sync_state), 'absent') FROM pg_stat_replication WHERE application_name = $1", s.Name).Scan(&state)
			if err == nil && state != "sync" {
				err = fmt.Errorf("standby %s is %s, not sync", s.Name, state)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
	}
	return nil
}

// Crash stops the server with an immediate shutdown (pg_ctl stop -m immediate): no
// checkpoint, clients cut off mid-transaction, what a crash of the postmaster looks like to
// them. A walsender stopped by StallReplication is killed once the shutdown's SIGQUIT reaches
// it, before it sends anything more. The directory stays, so Start can bring the server back
// for crash-recovery tests.
func (c *Cluster) Crash() error {
	if c.proc == nil || c.proc.exited() {
		return fmt.Errorf("pgcluster: %s is not running", c.Name)
	}
	stopped := make(chan error, 1)
	shutdownDone := make(chan struct{})
	go func() {
		stopped <- run(c.acct, c.dir, commandTimeout, filepath.Join(c.bin, "pg_ctl"), "stop", "-D", c.DataDir, "-m", "immediate", "-w")
		close(shutdownDone)
	}()
	errStalled := c.endStalled(shutdownDone)
	if err := <-stopped; err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if errStalled != nil {
		return errStalled
	}
	if err := c.proc.wait(stopTimeout); err != nil {
		return fmt.Errorf("pgcluster: crash %s: %w", c.Name, err)
	}
	return nil
}

// Start starts a stopped or crashed server again, on a new port: a crashed one goes
// through crash recovery first.
func (c *Cluster) Start(ctx context.Context) error {
	if c.proc != nil && !c.proc.exited() {
		return fmt.Errorf("pgcluster: %s is running", c.Name)
	}
	return c.start(ctx)
}

// Promote promotes a standby (pg_ctl promote) and waits until it accepts writes
// (pg_is_in_recovery() is false).
func (c *Cluster) Promote(ctx context.Context) error {
	if err := run(c.acct, c.dir, commandTimeout, filepath.Join(c.bin, "pg_ctl"), "promote", "-D", c.DataDir, "-w"); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.waitPrimary(ctx)
}

func (c *Cluster) waitPrimary(ctx context.Context) error {
	return poll(ctx, readyTimeout, func(ctx context.Context) error {
		var rec bool
		err := c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
		if err == nil && rec {
			err = fmt.Errorf("%s is still in recovery", c.Name)
		}
		return err
	})
}

// Stop shuts the server down (fast shutdown, SIGKILL if it hangs) and removes its directory.
// It may be called more than once, and after Crash.
func (c *Cluster) Stop() {
	c.resumeStalled()
	if c.proc != nil {
		c.proc.signal(syscall.SIGINT, stopTimeout)
	}
	c.remove()
}

// Log returns the end of the server's log, for a failing test's output.
func (c *Cluster) Log() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.logTail(8000)
}

func (c *Cluster) remove() { os.RemoveAll(c.dir) }

// writeFile writes a file of the data directory, owned by the server's user.
func (c *Cluster) writeFile(name, content string) error {
	p := filepath.Join(c.DataDir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.acct.chown(p)
}

// appendConf appends settings to a configuration file of the data directory (later lines win
// over earlier ones).
func (c *Cluster) appendConf(file string, settings map[string]string) error {
	p := filepath.Join(c.DataDir, file)
	old, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Write(old)
	b.WriteString("\n# pgcluster\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	return c.writeFile(file, b.String())
}

// quote writes s as a single-quoted postgresql.conf or SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// poll calls fn until it succeeds or total passes, each call with its own short deadline. It
// reports the last error that was not the deadline itself.
func poll(ctx context.Context, total time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		err := fn(attempt)
		cancelAttempt()
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", total, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// closingRow closes its connection once scanned.
type closingRow struct {
	conn *pgx.Conn
	row  pgx.Row
	ctx  context.Context
}

func (r closingRow) Scan(dest ...any) error {
	defer r.conn.Close(r.ctx)
	return r.row.Scan(dest...)
}

// MustPrimary is StartPrimary for one test: it fails the test on error and stops the
// cluster when the test ends, logging the server's log first if the test failed.
func MustPrimary(t testing.TB, o Options) *Cluster {
	t.Helper()
	c, err := StartPrimary(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	c.cleanup(t)
	return c
}

// MustStandby is StartStandby for one test; see MustPrimary.
func MustStandby(t testing.TB, primary *Cluster, o StandbyOptions) *Cluster {
	t.Helper()
	c, err := StartStandby(t.Context(), primary, o)
	if err != nil {
		t.Fatal(err)
	}
	c.cleanup(t)
	return c
}

func (c *Cluster) cleanup(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s (%s):\n%s", c.Name, c.Addr(), c.Log())
		}
		c.Stop()
	})
}
