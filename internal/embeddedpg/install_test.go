package embeddedpg

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// fakeInstall records the apt-get calls ensureInstalled makes instead of running them.
type fakeInstall struct {
	installed bool
	euid      int
	noAptGet  bool
	failFirst bool // the first install fails, as with empty package lists
	calls     []string
}

func (f *fakeInstall) env() installEnv {
	return installEnv{
		find: func() error {
			if f.installed {
				return nil
			}
			return ErrNoBinaries
		},
		geteuid: func() int { return f.euid },
		lookPath: func(string) (string, error) {
			if f.noAptGet {
				return "", errors.New("not found")
			}
			return "/usr/bin/apt-get", nil
		},
		run: func(_ string, args ...string) error {
			f.calls = append(f.calls, args[0])
			if args[0] == "install" && f.failFirst && len(f.calls) == 1 {
				return errors.New("unable to locate package")
			}
			f.installed = f.installed || args[0] == "install"
			return nil
		},
	}
}

func TestEnsureInstalled(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	for _, tc := range []struct {
		name    string
		fake    fakeInstall
		wantErr error
		calls   []string
	}{
		{name: "already installed", fake: fakeInstall{installed: true, euid: 1000}},
		{name: "not root", fake: fakeInstall{euid: 1000}, wantErr: ErrNoBinaries},
		{name: "no apt-get", fake: fakeInstall{noAptGet: true}, wantErr: ErrNoBinaries},
		{name: "installs", fake: fakeInstall{}, calls: []string{"install"}},
		{name: "updates and retries", fake: fakeInstall{failFirst: true}, calls: []string{"install", "update", "install"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ensureInstalled(logger, tc.fake.env())
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v; want %v", err, tc.wantErr)
			}
			if !slices.Equal(tc.fake.calls, tc.calls) {
				t.Fatalf("apt-get calls = %v; want %v", tc.fake.calls, tc.calls)
			}
		})
	}
}

func TestEnsureInstalledReportsAptFailure(t *testing.T) {
	f := fakeInstall{}
	env := f.env()
	env.run = func(string, ...string) error { return errors.New("no network") }
	err := ensureInstalled(slog.New(slog.DiscardHandler), env)
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "no network") {
		t.Fatalf("err = %v; want ErrNoBinaries with apt's reason", err)
	}
}
