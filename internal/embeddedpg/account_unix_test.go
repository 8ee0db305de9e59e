//go:build unix

package embeddedpg

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fakeUsers is an accountEnv of a root process with the given environment and a user
// database that knows only postgres (uid 101).
func fakeUsers(env map[string]string) accountEnv {
	return accountEnv{
		geteuid: func() int { return 0 },
		getenv:  func(k string) string { return env[k] },
		lookupID: func(uid string) (*user.User, error) {
			if uid == "101" {
				return &user.User{Uid: "101", Gid: "104", Username: "postgres"}, nil
			}
			return nil, user.UnknownUserIdError(0)
		},
		lookupName: func(name string) (*user.User, error) {
			if name == "postgres" {
				return &user.User{Uid: "101", Gid: "104", Username: "postgres"}, nil
			}
			return nil, user.UnknownUserError(name)
		},
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other users")
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func TestChooseAccountNotRoot(t *testing.T) {
	env := fakeUsers(nil)
	env.geteuid = func() int { return 1000 }
	if a, err := chooseAccount(t.TempDir(), env); a != nil || err != nil {
		t.Fatalf("chooseAccount = %v, %v; want nil, nil (the current user)", a, err)
	}
}

func TestChooseAccount(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		setup   func(t *testing.T, dataDir string)
		wantUID uint32
		wantErr string
	}{
		{name: "postgres when everything is root's", wantUID: 101},
		{name: "sudo user", env: map[string]string{"SUDO_UID": "4242", "SUDO_GID": "4343"}, wantUID: 4242},
		{name: "sudo from root is no sudo user", env: map[string]string{"SUDO_UID": "0"}, wantUID: 101},
		{name: "owner of the parent", setup: func(t *testing.T, d string) { chown(t, filepath.Dir(d), 5000) }, wantUID: 5000},
		{name: "owner of the data dir", setup: func(t *testing.T, d string) { mkdir(t, d); chown(t, d, 5001) }, wantUID: 5001},
		{
			name: "owner of the existing cluster wins over sudo",
			env:  map[string]string{"SUDO_UID": "4242"},
			setup: func(t *testing.T, d string) {
				writeFile(t, filepath.Join(d, "postgres", "PG_VERSION"), "15\n")
				chown(t, filepath.Join(d, "postgres"), 101)
			},
			wantUID: 101,
		},
		{
			name:    "cluster owned by root",
			setup:   func(t *testing.T, d string) { writeFile(t, filepath.Join(d, "postgres", "PG_VERSION"), "15\n") },
			wantErr: "belongs to root",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "queen-data")
			if tc.setup != nil {
				tc.setup(t, dataDir)
			}
			a, err := chooseAccount(dataDir, fakeUsers(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a == nil || a.uid != tc.wantUID {
				t.Fatalf("account = %+v; want uid %d", a, tc.wantUID)
			}
		})
	}
}

func TestChooseAccountSudoGroup(t *testing.T) {
	a, err := chooseAccount(filepath.Join(t.TempDir(), "d"), fakeUsers(map[string]string{"SUDO_UID": "4242", "SUDO_GID": "4343"}))
	if err != nil || a.uid != 4242 || a.gid != 4343 || a.name != "uid 4242" {
		t.Fatalf("account = %+v, %v; want uid 4242 gid 4343 named by its number", a, err)
	}
}

func TestChooseAccountNoPostgresUser(t *testing.T) {
	env := fakeUsers(nil)
	env.lookupName = func(name string) (*user.User, error) { return nil, user.UnknownUserError(name) }
	dir := filepath.Join(t.TempDir(), "d")
	if os.Geteuid() != 0 {
		t.Skip("the parent of a temporary directory is the tester's, not root's")
	}
	if _, err := chooseAccount(dir, env); err == nil || !strings.Contains(err.Error(), `no "postgres" system user`) {
		t.Fatalf("err = %v", err)
	}
}

// TestCheckOwnedBy is the later run without root on a directory a root run left behind.
func TestCheckOwnedBy(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "my data")
	writeFile(t, filepath.Join(dataDir, "postgres", "PG_VERSION"), "15\n")
	me := uint32(os.Geteuid())
	nameOf := func(uid uint32) string { return map[uint32]string{me: "postgres"}[uid] }
	err := checkOwnedBy(dataDir, me+1, "alice", nameOf)
	want := "sudo chown -R alice '" + dataDir + "'"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dataDir+" belongs to postgres, not to alice") {
		t.Fatalf("err = %v; want it to name the owner and %q", err, want)
	}
	if err := checkOwnedBy(dataDir, me, "postgres", nameOf); err != nil {
		t.Fatalf("owner's own directory: %v", err)
	}
	if err := checkOwnedBy(filepath.Join(t.TempDir(), "new"), me+1, "alice", nameOf); err != nil {
		t.Fatalf("a directory yet to create: %v", err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/queen-data": "/srv/queen-data",
		"/a b":            "'/a b'",
		"it's":            `'it'\''s'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s; want %s", in, got, want)
		}
	}
}

// TestStartUnderSudo runs the real server as root with SUDO_UID set: everything in the data
// directory belongs to that user, and a second run as root without sudo keeps that user.
func TestStartUnderSudo(t *testing.T) {
	needRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody user")
	}
	dataDir := newDataDir(t)
	t.Setenv("SUDO_UID", nobody.Uid)
	t.Setenv("SUDO_GID", nobody.Gid)
	s := start(t, dataDir)
	queryText(t, s.DSN(), "SELECT 1::text")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dataDir, filepath.Join(dataDir, "postgres"), filepath.Join(dataDir, "postgres.log")} {
		if uid := ownerOf(t, p); nobody.Uid != uid {
			t.Errorf("%s belongs to uid %s; want %s (nobody)", p, uid, nobody.Uid)
		}
	}
	t.Setenv("SUDO_UID", "")
	s = start(t, dataDir)
	if got := queryText(t, s.DSN(), "SELECT 1::text"); got != "1" {
		t.Fatal(got)
	}
	if _, err := Start(context.Background(), Options{DataDir: dataDir, BinDir: binDir(t)}); err == nil {
		t.Fatal("a second server on the same directory started")
	}
}

func ownerOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(uint64(fi.Sys().(*syscall.Stat_t).Uid), 10)
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
