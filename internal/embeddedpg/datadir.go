package embeddedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// makeDataDir creates $QUEEN_DATA_DIR when missing. When the process runs as root, the
// directory is given to the account that runs PostgreSQL, so that a later run by that user
// without root can use it; that user must also be able to pass through the directories above.
func makeDataDir(dir string, a *account) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o700); err != nil { // the umask may have dropped bits
			return err
		}
	} else if err != nil {
		return err
	}
	if err := a.adopt(dir); err != nil {
		return err
	}
	return a.checkTraversable(dir)
}

// initDataDir runs initdb on first use and checks an existing data directory otherwise.
//
// initdb writes into a temporary sibling that is renamed into place only when complete, so a
// first start interrupted half-way leaves nothing that looks like a usable data directory.
func initDataDir(ctx context.Context, binDir string, v version, pgdata string, a *account, log io.Writer, logger *slog.Logger) error {
	pgVersion, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	switch {
	case err == nil:
		return checkExisting(pgdata, strings.TrimSpace(string(pgVersion)), binDir, v, a)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	// An empty directory (made by hand, say) is replaced; Remove refuses anything with content.
	if err := os.Remove(pgdata); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s exists but is not a PostgreSQL data directory (no PG_VERSION) and cannot be replaced (%v); "+
			"move it away", pgdata, err)
	}
	tmp := pgdata + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	if err := a.chown(tmp); err != nil {
		return err
	}
	// --no-locale: byte-order collation works without any locale installed in the container
	// and sorts the same on every machine.
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", tmp, "-E", "UTF8", "--no-locale", "--auth=trust", "-U", "postgres")
	cmd.Dir = filepath.Dir(pgdata) // the postgres user may not be allowed into our working directory
	cmd.SysProcAttr = sysProcAttr(a, false, false)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, log), io.MultiWriter(&out, log)
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("initdb %s: %w: %s", pgdata, err, tail(out.Bytes(), 2000))
	}
	if err := os.Rename(tmp, pgdata); err != nil {
		return err
	}
	logger.Info("created the embedded PostgreSQL data directory", "data_dir", pgdata, "version", v.String())
	return nil
}

// checkExisting catches the mistakes PostgreSQL would report only in its log: a data directory
// of another major version or owned by another user.
func checkExisting(pgdata, dataMajor, binDir string, v version, a *account) error {
	if dataMajor != strconv.Itoa(v.major) {
		return fmt.Errorf("the embedded PostgreSQL data directory %s was created by PostgreSQL %s, "+
			"but the binaries in %s are PostgreSQL %s; set PG_BIN_DIR to PostgreSQL %s binaries "+
			"or upgrade the data directory with pg_upgrade", pgdata, dataMajor, binDir, v, dataMajor)
	}
	fi, err := os.Stat(pgdata)
	if err != nil {
		return err
	}
	if !a.owns(fi) {
		return fmt.Errorf("the embedded PostgreSQL data directory %s must belong to the %s user, which runs the server",
			pgdata, a.name)
	}
	return nil
}

// clearStaleLock removes the lock files of a server that is gone, typically one that crashed
// or was killed with the machine. PostgreSQL does this itself unless the recorded PID has
// meanwhile been reused by another process (common after a container restart), in which case
// it refuses to start. A lock held by a live server is reported instead.
func clearStaleLock(pgdata string) error {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if pid < 0 {
		pid = -pid // a single-user backend records its PID negated
	}
	if pid > 0 && serverAlive(pid) {
		return fmt.Errorf("the embedded PostgreSQL data directory %s is in use by a running server (PID %d), "+
			"probably another queen-go instance with the same QUEEN_DATA_DIR; stop it or use another QUEEN_DATA_DIR",
			pgdata, pid)
	}
	for _, name := range []string{"postmaster.pid", socketName + ".lock", socketName} {
		if err := os.Remove(filepath.Join(pgdata, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale lock: %w", err)
		}
	}
	return nil
}

// serverAlive reports whether pid is a running PostgreSQL process. Our own PID cannot be one:
// it can only appear in a lock file left before a restart.
func serverAlive(pid int) bool {
	if pid == os.Getpid() || !processAlive(pid) {
		return false
	}
	name, ok := processName(pid)
	return !ok || name == "postgres" || name == "postmaster"
}
