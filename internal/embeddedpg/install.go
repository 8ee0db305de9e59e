package embeddedpg

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"
)

// EnsureInstalled makes sure PostgreSQL server binaries can be found, installing the Debian
// postgresql package when none are found, the process runs as root and apt-get exists (the
// common case of a fresh container). Otherwise it returns ErrNoBinaries.
//
// It looks only at PATH and the usual install directories: call it when PG_BIN_DIR is unset,
// since a wrong PG_BIN_DIR is a mistake to report, not a reason to install packages.
func EnsureInstalled(logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return ensureInstalled(logger, installEnv{
		find:     func() error { _, err := FindBinaries(""); return err },
		geteuid:  os.Geteuid,
		lookPath: exec.LookPath,
		run:      runApt,
	})
}

// installEnv holds the side effects of ensureInstalled so tests can check its decisions
// without running apt-get.
type installEnv struct {
	find     func() error
	geteuid  func() int
	lookPath func(string) (string, error)
	run      func(aptGet string, args ...string) error
}

func ensureInstalled(logger *slog.Logger, env installEnv) error {
	if env.find() == nil {
		return nil
	}
	if env.geteuid() != 0 {
		return ErrNoBinaries
	}
	aptGet, err := env.lookPath("apt-get")
	if err != nil {
		return ErrNoBinaries
	}
	logger.Info("no PostgreSQL server binaries found; installing the postgresql package with apt-get")
	install := []string{"install", "-y", "-q", "--no-install-recommends", "postgresql"}
	if err := env.run(aptGet, install...); err != nil {
		// A fresh container usually has empty package lists; refresh them and try once more.
		logger.Info("apt-get install failed; updating the package lists and retrying", "err", err)
		if err := env.run(aptGet, "update", "-q"); err != nil {
			return fmt.Errorf("install PostgreSQL: %w: %w", err, ErrNoBinaries)
		}
		if err := env.run(aptGet, install...); err != nil {
			return fmt.Errorf("install PostgreSQL: %w: %w", err, ErrNoBinaries)
		}
	}
	if err := env.find(); err != nil {
		return fmt.Errorf("installed the postgresql package but still found no usable server binaries: %w", err)
	}
	logger.Info("installed the postgresql package")
	return nil
}

// runApt runs apt-get non-interactively; on failure the error carries the end of its output,
// which is where apt explains what went wrong.
func runApt(aptGet string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, aptGet, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %v: %w: %s", args, err, tail(out.Bytes(), 2000))
	}
	return nil
}

// tail returns at most the last n bytes of b, trimmed, for error messages.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}
