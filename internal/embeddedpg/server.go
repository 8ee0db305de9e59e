package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// port only names the socket file (.s.PGSQL.5432): there is no TCP listener, so the usual
	// port cannot clash with another server.
	port       = 5432
	socketName = ".s.PGSQL.5432"
	// maxSocketPath is the longest socket path every Unix accepts (sun_path minus the NUL).
	maxSocketPath = 103

	readyTimeout = 30 * time.Second
	stopTimeout  = 60 * time.Second
)

// Options configures Start.
type Options struct {
	// DataDir is $QUEEN_DATA_DIR; the server keeps its data in DataDir/postgres and its log in
	// DataDir/postgres.log.
	DataDir string
	// BinDir holds initdb and postgres; empty means FindBinaries("").
	BinDir string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
	// Detached keeps the server running after this process exits, for test fixtures shared by
	// several processes. A broker leaves it false so PostgreSQL never outlives it.
	Detached bool
}

// Server is a running embedded PostgreSQL server started by this process.
type Server struct {
	pgdata  string
	proc    *os.Process
	done    chan struct{}
	waitErr error // set before done is closed
	logger  *slog.Logger

	stopOnce sync.Once
	stopErr  error
}

// Start runs PostgreSQL on opts.DataDir, creating the data directory on first use, and returns
// once the server accepts connections. The server runs until Stop, or until this process dies
// (Linux, unless Options.Detached).
func Start(ctx context.Context, opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.DataDir == "" {
		return nil, errors.New("embedded PostgreSQL: no data directory given")
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = FindBinaries(""); err != nil {
			return nil, err
		}
	}
	v, err := probe(binDir)
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	pgdata := filepath.Join(dataDir, "postgres")
	if p := filepath.Join(pgdata, socketName); len(p) > maxSocketPath {
		return nil, fmt.Errorf("embedded PostgreSQL: socket path %s is longer than %d bytes, the limit of Unix sockets; "+
			"choose a shorter QUEEN_DATA_DIR", p, maxSocketPath)
	}
	a, err := serverAccount(dataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	if a == nil {
		if err := checkOwnedBySelf(dataDir); err != nil {
			return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
		}
	} else {
		logger.Info("running as root: the embedded PostgreSQL runs as another user, who owns its files",
			"user", a.name, "why", a.why)
	}
	if err := makeDataDir(dataDir, a); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	logPath := filepath.Join(dataDir, "postgres.log")
	// The log is opened here and inherited, so the server's user needs no access to dataDir.
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL log: %w", err)
	}
	defer logFile.Close() // the server holds its own descriptor
	if err := a.adopt(logPath); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL log: %w", err)
	}
	if err := initDataDir(ctx, binDir, v, pgdata, a, logFile, logger); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	if err := clearStaleLock(pgdata); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	logStart, _ := logFile.Seek(0, io.SeekEnd)

	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", pgdata, "-p", fmt.Sprint(port),
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+gucQuote(pgdata))
	cmd.Dir = dataDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr(a, true, opts.Detached)
	s := &Server{pgdata: pgdata, done: make(chan struct{}), logger: logger}
	if err := s.launch(cmd); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: start %s: %w", cmd.Path, err)
	}
	if err := s.waitReady(ctx); err != nil {
		s.halt()
		return nil, fmt.Errorf("embedded PostgreSQL did not start: %w; its log %s ends with:\n%s",
			err, logPath, readTail(logPath, logStart, 2000))
	}
	logger.Info("embedded PostgreSQL started", "version", v.String(), "bin_dir", binDir,
		"data_dir", pgdata, "log", logPath, "pid", s.proc.Pid)
	return s, nil
}

// launch starts the postmaster (see StartLocked).
func (s *Server) launch(cmd *exec.Cmd) error {
	err := StartLocked(cmd, func(err error) {
		s.waitErr = err
		close(s.done)
	})
	if err == nil {
		s.proc = cmd.Process
	}
	return err
}

// StartLocked starts cmd from a goroutine locked to its OS thread until the child exits:
// Linux sends a child's parent-death signal (SysProcAttr.Pdeathsig) when the thread that
// created it ends, not the process, and the Go runtime may otherwise retire that thread while
// the child runs. It returns cmd.Start's error; once a started child has exited, exited is
// called, on that goroutine, with cmd.Wait's.
func StartLocked(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}

// waitReady polls until a connection succeeds, the server exits or the time is up.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, s.DSN())
		cancelAttempt()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.done:
			return fmt.Errorf("the server exited (%v)", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", readyTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DSN returns a pgx connection string for the server's postgres database.
func (s *Server) DSN() string { return SocketDSN(filepath.Dir(s.pgdata)) }

// SocketDSN returns the connection string of the embedded server Start runs for dataDir
// ($QUEEN_DATA_DIR), whether or not it runs: processes sharing a server use it to connect.
func SocketDSN(dataDir string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable",
		dsnQuote(filepath.Join(dataDir, "postgres")), port)
}

// Done is closed when the server has exited, whether stopped or crashed.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop shuts the server down with a fast shutdown (SIGINT: active transactions are rolled
// back, data is checkpointed) and waits for it to exit. It may be called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.done:
		if s.waitErr != nil {
			return fmt.Errorf("embedded PostgreSQL had already exited: %w", s.waitErr)
		}
		return nil
	default:
	}
	if err := s.proc.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop embedded PostgreSQL: %w", err)
	}
	select {
	case <-s.done:
		s.logger.Info("embedded PostgreSQL stopped")
		return nil
	case <-time.After(stopTimeout):
	}
	s.halt()
	return fmt.Errorf("embedded PostgreSQL did not finish a fast shutdown within %v and was stopped immediately", stopTimeout)
}

// halt ends the server at once: an immediate shutdown, which lets the postmaster take its
// backends down with it, and SIGKILL if even that hangs.
func (s *Server) halt() {
	_ = s.proc.Signal(quitSignal)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.proc.Kill()
		<-s.done
	}
}

// dsnQuote quotes a value of a key/value connection string.
func dsnQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// gucQuote quotes a directory for unix_socket_directories, a comma-separated list.
func gucQuote(dir string) string {
	if strings.ContainsAny(dir, ", \t") {
		return `"` + dir + `"`
	}
	return dir
}

// readTail returns the end of what the server logged since offset, for startup errors.
func readTail(path string, offset int64, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return "(log unreadable)"
	}
	return tail(b[offset:], n)
}
