package embeddedpg

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeInstall records the apt-get and pg_dropcluster calls ensureInstalled makes instead of
// running them. Its "install" does what Debian's postinst does to a first install: it creates
// the cluster 15/main and asks to start it, which only a policy-rc.d answering 101 prevents.
type fakeInstall struct {
	installed   bool
	euid        int
	noAptGet    bool
	failFirst   bool // the first install fails, as with empty package lists
	ownPolicy   bool // the machine has its own policy-rc.d
	calls       []string
	started     bool // a service start was allowed during an install
	policyRCD   string
	clusterConf string
}

func newFake(t *testing.T, f fakeInstall) *fakeInstall {
	dir := t.TempDir()
	f.policyRCD = filepath.Join(dir, "policy-rc.d")
	f.clusterConf = filepath.Join(dir, "etc-postgresql")
	if f.ownPolicy {
		if err := os.WriteFile(f.policyRCD, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A cluster of another version the administrator made: never to be touched.
	writeCluster(t, f.clusterConf, "14", "reports")
	return &f
}

func writeCluster(t *testing.T, root, version, name string) {
	t.Helper()
	dir := filepath.Join(root, version, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "postgresql.conf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeInstall) env(t *testing.T) installEnv {
	return installEnv{
		find: func() error {
			if f.installed {
				return nil
			}
			return ErrNoBinaries
		},
		geteuid: func() int { return f.euid },
		lookPath: func(name string) (string, error) {
			if f.noAptGet && name == "apt-get" {
				return "", errors.New("not found")
			}
			return "/usr/bin/" + name, nil
		},
		run: func(program string, args ...string) error {
			if filepath.Base(program) == "pg_dropcluster" {
				f.calls = append(f.calls, "pg_dropcluster "+strings.Join(args, " "))
				if err := os.RemoveAll(filepath.Join(f.clusterConf, args[1], args[2])); err != nil {
					t.Fatal(err)
				}
				return nil
			}
			f.calls = append(f.calls, args[0])
			if args[0] == "install" && f.failFirst && len(f.calls) == 1 {
				return errors.New("unable to locate package")
			}
			if args[0] == "install" {
				f.installed = true
				writeCluster(t, f.clusterConf, "15", "main")
				b, err := os.ReadFile(f.policyRCD)
				f.started = err != nil || !strings.Contains(string(b), "exit 101")
			}
			return nil
		},
		policyRCD:   f.policyRCD,
		clusterConf: f.clusterConf,
	}
}

func TestEnsureInstalled(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	drop := "pg_dropcluster --stop 15 main"
	for _, tc := range []struct {
		name    string
		fake    fakeInstall
		wantErr error
		calls   []string
	}{
		{name: "already installed", fake: fakeInstall{installed: true, euid: 1000}},
		{name: "not root", fake: fakeInstall{euid: 1000}, wantErr: ErrNoBinaries},
		{name: "no apt-get", fake: fakeInstall{noAptGet: true}, wantErr: ErrNoBinaries},
		{name: "installs", fake: fakeInstall{}, calls: []string{"install", drop}},
		{name: "updates and retries", fake: fakeInstall{failFirst: true}, calls: []string{"install", "update", "install", drop}},
		{name: "machine's own policy-rc.d", fake: fakeInstall{ownPolicy: true}, calls: []string{"install", drop}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.fake)
			err := ensureInstalled(logger, f.env(t))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v; want %v", err, tc.wantErr)
			}
			if !slices.Equal(f.calls, tc.calls) {
				t.Fatalf("calls = %q; want %q", f.calls, tc.calls)
			}
			if f.started {
				t.Error("a service could start during the install: no policy-rc.d answering 101")
			}
			_, err = os.Stat(f.policyRCD)
			if exists := err == nil; exists != tc.fake.ownPolicy {
				t.Errorf("policy-rc.d exists after the install: %v; want %v (only the machine's own stays)", exists, tc.fake.ownPolicy)
			}
			if got := clusters(f.clusterConf); len(got) != 1 || !got["14/reports"] {
				t.Errorf("clusters after the install = %v; want only the administrator's 14/reports", got)
			}
		})
	}
}

func TestEnsureInstalledDropFails(t *testing.T) {
	f := newFake(t, fakeInstall{})
	env := f.env(t)
	run := env.run
	env.run = func(program string, args ...string) error {
		if filepath.Base(program) == "pg_dropcluster" {
			return errors.New("boom")
		}
		return run(program, args...)
	}
	err := ensureInstalled(slog.New(slog.DiscardHandler), env)
	if err == nil || !strings.Contains(err.Error(), "pg_dropcluster --stop 15 main") {
		t.Fatalf("err = %v; want one naming the command to run by hand", err)
	}
}
