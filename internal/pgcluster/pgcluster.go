// Package pgcluster starts real PostgreSQL clusters (a primary, streaming standbys) and real
// PgBouncer poolers for tests that need more than the shared test server: replication,
// failover, a transaction-mode pooler. Everything runs from the system binaries (Debian's
// postgresql and pgbouncer packages) on free TCP ports of 127.0.0.1, in a private temporary
// directory, as the postgres user when the test runs as root (PostgreSQL and PgBouncer refuse
// to run as root) and as the current user otherwise.
//
// Missing binaries are an error naming the Debian package to install, never a skip: a test
// that needs a standby or a pooler and silently does not run proves nothing.
//
// # Lifetime
//
// Every server runs as a direct child of the test process, started from an OS thread that
// lives as long as the server, with a parent-death signal: when the test binary dies (a panic,
// a timeout, SIGKILL) the kernel shuts the server down, so no cluster outlives its test run.
// Stop (or Crash) ends a server explicitly; Stop also removes its directory.
//
// # One cluster per package
//
// initdb and pg_basebackup take seconds; a package whose tests share a primary and a standby
// starts them once in TestMain, and each test uses its own database (CreateDatabase) or
// schema on them:
//
//	var primary, standby *pgcluster.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(run(m)) }
//
//	func run(m *testing.M) int {
//		ctx := context.Background()
//		var err error
//		if primary, err = pgcluster.StartPrimary(ctx, pgcluster.Options{}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		defer primary.Stop()
//		if standby, err = pgcluster.StartStandby(ctx, primary, pgcluster.StandbyOptions{Name: "s1"}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		defer standby.Stop()
//		return m.Run()
//	}
//
// A test that destroys its cluster (a crash and promotion) starts its own with the Must*
// helpers, which stop it when the test ends and log the server's log if the test failed.
package pgcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/queen-go/queen/internal/embeddedpg"
)

// PgBouncerPath is where Debian's pgbouncer package installs the pooler.
const PgBouncerPath = "/usr/sbin/pgbouncer"

// pgPrograms are the PostgreSQL programs this package runs; all must sit in one directory.
var pgPrograms = []string{"initdb", "postgres", "pg_ctl", "pg_basebackup"}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// BinDir returns the directory of the PostgreSQL server programs: PG_BIN_DIR when set, else
// the one embeddedpg.FindBinaries chooses (PATH, then the newest of the usual install
// directories, such as /usr/lib/postgresql/<version>/bin), followed through symbolic links.
func BinDir() (string, error) {
	binOnce.Do(func() {
		dir, err := embeddedpg.FindBinaries(os.Getenv("PG_BIN_DIR"))
		if err != nil {
			binErr = fmt.Errorf("pgcluster: %v; install the Debian package postgresql (apt-get install postgresql)", err)
			return
		}
		// PATH may hold links to a few of the programs only (initdb, postgres): the
		// installation they point into has them all.
		if real, err := filepath.EvalSymlinks(filepath.Join(dir, "postgres")); err == nil {
			dir = filepath.Dir(real)
		}
		for _, p := range pgPrograms {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				binErr = fmt.Errorf("pgcluster: no %s in %s; install the Debian package postgresql (apt-get install postgresql)", p, dir)
				return
			}
		}
		binDir = dir
	})
	return binDir, binErr
}

// account is the user the servers run as: nil for the current user, postgres for root.
type account struct {
	uid, gid uint32
	name     string
}

var (
	acctOnce sync.Once
	acct     *account
	acctErr  error
)

// runAs returns the account servers run as; see the package comment.
func runAs() (*account, error) {
	acctOnce.Do(func() {
		if os.Geteuid() != 0 {
			return
		}
		u, err := user.Lookup("postgres")
		if err != nil {
			acctErr = fmt.Errorf("pgcluster: the tests run as root, which PostgreSQL and PgBouncer refuse, and there is no postgres user to run them as (%v); "+
				"install the Debian package postgresql, which creates it, or run the tests as an ordinary user", err)
			return
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			acctErr = fmt.Errorf("pgcluster: user postgres has a non-numeric uid %q or gid %q", u.Uid, u.Gid)
			return
		}
		acct = &account{uid: uint32(uid), gid: uint32(gid), name: "postgres"}
	})
	return acct, acctErr
}

// attr returns the process attributes of a program run as a: its credentials and, for a
// server, its own process group and a parent-death signal.
func (a *account) attr(deathSignal syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
	}
	if deathSignal != 0 {
		setDeathSignal(attr, deathSignal)
	}
	return attr
}

// chown gives path to the account (nothing for the current user).
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
}

// makeDir creates a fresh temporary directory the account owns and can enter.
func makeDir(a *account, prefix string) (string, error) {
	dir, err := os.MkdirTemp("", "pgcluster-"+prefix+"-")
	if err != nil {
		return "", err
	}
	// PostgreSQL wants its data directory 0700 (initdb creates it below); the parent only
	// needs to be reachable by its owner.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if err := a.chown(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// run runs a short-lived program as the account and returns its combined output in the error.
func run(a *account, dir string, timeout time.Duration, name string, args ...string) error {
	cmd := execCommand(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = a.attr(0)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
		}
		return nil
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("%s %s: no result within %v\n%s", filepath.Base(name), strings.Join(args, " "), timeout, out.String())
	}
}

// execCommand is exec.Command with the environment of every program run here: messages in
// English (the address-in-use check reads them) and no PG* variables of the test's own.
func execCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	env := []string{"LC_ALL=C"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

// process is a long-running server started by this package.
type process struct {
	proc    *os.Process
	done    chan struct{}
	waitErr error // set before done is closed
	log     string
}

// launch starts cmd with its output appended to logPath, from a goroutine locked to its OS
// thread until the server exits (embeddedpg.StartLocked: the parent-death signal follows the
// thread).
func launch(cmd *exec.Cmd, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &process{done: make(chan struct{}), log: logPath}
	err = embeddedpg.StartLocked(cmd, func(err error) {
		p.waitErr = err
		close(p.done)
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.proc = cmd.Process
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits up to timeout for the process to end, then kills it.
func (p *process) signal(sig syscall.Signal, timeout time.Duration) {
	if p.exited() {
		return
	}
	_ = p.proc.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.proc.Kill()
		<-p.done
	}
}

// wait waits up to timeout for the process to end by itself.
func (p *process) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("pid %d still running after %v", p.proc.Pid, timeout)
	}
}

// logTail returns the last n bytes of the process's log.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on at the moment. Another
// process may take it before the server binds it; callers retry on "address in use".
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// errAddrInUse marks a start that failed because the chosen port was taken meanwhile.
var errAddrInUse = errors.New("address already in use")

// startRetries is how often a start is tried with a new port after losing the port race.
const startRetries = 5
