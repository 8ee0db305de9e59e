package embeddedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// EnsureInstalled makes sure PostgreSQL server binaries can be found, installing the Debian
// postgresql package when none are found, the process runs as root and apt-get exists (the
// common case of a fresh container). Otherwise it returns ErrNoBinaries.
//
// The package would start a system cluster of its own (Debian creates "main" and starts it):
// queen-go wants only the binaries, so no service may start during the install (a policy-rc.d
// that answers 101, unless the machine has one already), and every cluster that appeared with
// the install is dropped afterwards with pg_dropcluster --stop. Existing clusters are never
// touched.
//
// It looks only at PATH and the usual install directories: call it when PG_BIN_DIR is unset,
// since a wrong PG_BIN_DIR is a mistake to report, not a reason to install packages.
func EnsureInstalled(logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return ensureInstalled(logger, installEnv{
		find:        func() error { _, err := FindBinaries(""); return err },
		geteuid:     os.Geteuid,
		lookPath:    exec.LookPath,
		run:         runCommand,
		policyRCD:   "/usr/sbin/policy-rc.d",
		clusterConf: "/etc/postgresql",
	})
}

// installEnv holds the side effects of ensureInstalled so tests can check its decisions
// without running apt-get.
type installEnv struct {
	find     func() error
	geteuid  func() int
	lookPath func(string) (string, error)
	run      func(program string, args ...string) error
	// policyRCD is Debian's hook that invoke-rc.d and deb-systemd-invoke consult before
	// starting a service from a package script; exit status 101 means "do not".
	policyRCD string
	// clusterConf is where postgresql-common keeps one directory per cluster,
	// clusterConf/<version>/<name>/postgresql.conf.
	clusterConf string
}

// policyRCDScript forbids every service start while it is installed.
const policyRCDScript = "#!/bin/sh\n# Written by queen-go while it installs PostgreSQL; removed when the install ends.\nexit 101\n"

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
	before := clusters(env.clusterConf)
	logger.Info("no PostgreSQL server binaries found; installing the postgresql package with apt-get " +
		"(services kept from starting; the cluster the package creates is dropped afterwards)")
	removePolicy, err := forbidServiceStarts(env.policyRCD)
	if err != nil {
		return fmt.Errorf("install PostgreSQL: %w", err)
	}
	err = aptInstall(logger, env, aptGet)
	if rerr := removePolicy(); rerr != nil {
		logger.Warn("could not remove the policy-rc.d written for the install; remove it by hand", "path", env.policyRCD, "err", rerr)
	}
	// Clusters are dropped even when apt failed half-way: the postinst may have created one.
	dropErr := dropNewClusters(logger, env, before)
	if err != nil {
		return err
	}
	if dropErr != nil {
		return dropErr
	}
	if err := env.find(); err != nil {
		return fmt.Errorf("installed the postgresql package but still found no usable server binaries: %w", err)
	}
	logger.Info("installed the postgresql package")
	return nil
}

func aptInstall(logger *slog.Logger, env installEnv, aptGet string) error {
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
	return nil
}

// forbidServiceStarts installs a policy-rc.d that answers 101 and returns the function that
// removes it. A policy-rc.d already there is the machine's own policy (Debian's container
// images ship one that answers 101) and stays as it is; whatever it lets start is stopped
// with the cluster afterwards.
func forbidServiceStarts(path string) (remove func() error, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return func() error { return nil }, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.WriteString(policyRCDScript)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	remove = func() error { return os.Remove(path) }
	if werr != nil {
		_ = remove()
		return nil, fmt.Errorf("write %s: %w", path, werr)
	}
	return remove, nil
}

// clusters lists the PostgreSQL clusters postgresql-common knows, as "version/name".
func clusters(confRoot string) map[string]bool {
	found := map[string]bool{}
	matches, _ := filepath.Glob(filepath.Join(confRoot, "*", "*", "postgresql.conf")) // constant, well-formed pattern
	for _, m := range matches {
		dir := filepath.Dir(m)
		found[filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)] = true
	}
	return found
}

// dropNewClusters removes the clusters that appeared since before: the package's postinst
// creates "main" for a first install, and the init system would start it at every boot.
func dropNewClusters(logger *slog.Logger, env installEnv, before map[string]bool) error {
	var created []string
	for c := range clusters(env.clusterConf) {
		if !before[c] {
			created = append(created, c)
		}
	}
	if len(created) == 0 {
		return nil
	}
	slices.Sort(created)
	drop, err := env.lookPath("pg_dropcluster")
	if err != nil {
		return fmt.Errorf("the postgresql package created the cluster(s) %v, which queen-go does not use, "+
			"and pg_dropcluster is missing to remove them: %w", created, err)
	}
	for _, c := range created {
		ver, name, _ := strings.Cut(c, "/")
		if err := env.run(drop, "--stop", ver, name); err != nil {
			return fmt.Errorf("drop the cluster %s the postgresql package created (queen-go runs its own server); "+
				"remove it with `pg_dropcluster --stop %s %s`: %w", c, ver, name, err)
		}
		logger.Info("dropped the PostgreSQL cluster the package created: queen-go runs its own server in QUEEN_DATA_DIR; "+
			"recreate it with pg_createcluster if you want a system cluster", "cluster", c)
	}
	return nil
}

// runCommand runs apt-get or pg_dropcluster non-interactively; on failure the error carries
// the end of its output, which is where they explain what went wrong.
func runCommand(program string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", filepath.Base(program), args, err, tail(out.Bytes(), 2000))
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
