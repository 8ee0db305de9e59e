//go:build unix

package embeddedpg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// account is the user PostgreSQL runs as when queen-go runs as root, because PostgreSQL
// refuses to run as root. A nil *account means "run as the current user".
type account struct {
	name     string
	uid, gid uint32
	groups   map[uint32]bool // primary and supplementary groups
	why      string          // why this user was chosen, for the log
}

// accountEnv holds what serverAccount reads from the system, so tests can check its choice
// for any user and environment without being root.
type accountEnv struct {
	geteuid    func() int
	getenv     func(string) string
	lookupID   func(uid string) (*user.User, error)
	lookupName func(name string) (*user.User, error)
}

var systemAccountEnv = accountEnv{geteuid: os.Geteuid, getenv: os.Getenv, lookupID: user.LookupId, lookupName: user.Lookup}

// serverAccount returns the user the embedded server for dataDir ($QUEEN_DATA_DIR, absolute)
// runs as when the process runs as root, nil otherwise. See chooseAccount.
func serverAccount(dataDir string) (*account, error) {
	return chooseAccount(dataDir, systemAccountEnv)
}

// chooseAccount picks, for a root process, the user whose files the data directory should be,
// so that a later run without root by that user finds a directory it can use:
//
//  1. the owner of an existing data directory ($QUEEN_DATA_DIR/postgres): PostgreSQL runs only
//     as the owner of its data, and an existing cluster is never given away silently;
//  2. the user who ran sudo (SUDO_UID): `sudo make run` in a checkout keeps queen-data theirs;
//  3. the owner of $QUEEN_DATA_DIR, or of the nearest existing directory above it, unless that
//     is root: a service started as root with QUEEN_DATA_DIR=/srv/queen owned by queen runs as queen;
//  4. the postgres system user, which Debian's postgresql package creates.
func chooseAccount(dataDir string, env accountEnv) (*account, error) {
	if env.geteuid() != 0 {
		return nil, nil
	}
	pgdata := filepath.Join(dataDir, "postgres")
	if fi, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		if dfi, err := os.Stat(pgdata); err == nil {
			st, _ = dfi.Sys().(*syscall.Stat_t)
		}
		if st == nil {
			return nil, fmt.Errorf("cannot tell the owner of %s", pgdata)
		}
		if st.Uid == 0 {
			return nil, fmt.Errorf("the embedded PostgreSQL data directory %s belongs to root, and PostgreSQL refuses to run as root; "+
				"give it to the user that should run it, e.g. %s", pgdata, chownCommand("postgres", dataDir))
		}
		return accountByID(env, st.Uid, st.Gid, "owner of the existing data directory "+pgdata)
	}
	if s := env.getenv("SUDO_UID"); s != "" {
		uid, err := strconv.ParseUint(s, 10, 32)
		if err == nil && uid != 0 {
			gid, gerr := strconv.ParseUint(env.getenv("SUDO_GID"), 10, 32)
			if gerr != nil {
				gid = uid
			}
			return accountByID(env, uint32(uid), uint32(gid), "the user who ran sudo (SUDO_UID)")
		}
	}
	for d := dataDir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
				return accountByID(env, st.Uid, st.Gid, "owner of "+d)
			}
			break
		}
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	const name = "postgres"
	u, err := env.lookupName(name)
	if err != nil {
		return nil, fmt.Errorf("queen-go runs as root and PostgreSQL refuses to run as root, "+
			"but there is no %q system user to run the embedded server as (%v); "+
			"create that user (the postgresql package does), run queen-go with sudo from your own account "+
			"or as an ordinary user, or give QUEEN_DATA_DIR's parent directory to the user that should run it", name, err)
	}
	return accountFromUser(u, "the postgres system user")
}

// accountByID returns the account of a user id, with its name and groups from the user
// database when it has an entry there (a container may run numeric ids that have none).
func accountByID(env accountEnv, uid, gid uint32, why string) (*account, error) {
	if u, err := env.lookupID(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return accountFromUser(u, why)
	}
	return &account{name: "uid " + strconv.FormatUint(uint64(uid), 10), uid: uid, gid: gid,
		groups: map[uint32]bool{gid: true}, why: why}, nil
}

func accountFromUser(u *user.User, why string) (*account, error) {
	a := &account{name: u.Username, groups: map[uint32]bool{}, why: why}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q or gid %q", u.Username, u.Uid, u.Gid)
	}
	a.uid, a.gid = uint32(uid), uint32(gid)
	a.groups[a.gid] = true
	ids, _ := u.GroupIds() // supplementary groups only widen access; failing to list them is harmless
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil {
			a.groups[uint32(g)] = true
		}
	}
	return a, nil
}

// checkOwnedBySelf is the check of a run without root: PostgreSQL runs as the current user and
// only on a data directory that user owns, and queen-go appends to postgres.log. A directory
// left by a root run of an older queen-go (owned by postgres and root) fails here with the
// command that fixes it, instead of "permission denied" from deep inside the start.
func checkOwnedBySelf(dataDir string) error {
	uid := uint32(os.Geteuid())
	me := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(me); err == nil {
		me = u.Username
	}
	return checkOwnedBy(dataDir, uid, me, func(uid uint32) string {
		if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
			return u.Username
		}
		return "uid " + strconv.FormatUint(uint64(uid), 10)
	})
}

func checkOwnedBy(dataDir string, uid uint32, me string, nameOf func(uint32) string) error {
	for _, p := range []string{dataDir, filepath.Join(dataDir, "postgres"), filepath.Join(dataDir, "postgres.log")} {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid == uid {
			continue
		}
		return fmt.Errorf("%s belongs to %s, not to %s, who runs queen-go (was it created by a run as root?); "+
			"PostgreSQL runs only as the owner of its data directory. Give the directory to %s with `%s`, "+
			"or run queen-go as %s, or set QUEEN_DATA_DIR to another directory",
			p, nameOf(st.Uid), me, me, chownCommand(me, dataDir), nameOf(st.Uid))
	}
	return nil
}

// chownCommand is the shell command that gives dir and everything in it to user.
func chownCommand(user, dir string) string {
	return "sudo chown -R " + shellQuote(user) + " " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sysProcAttr builds the process attributes of initdb and postgres. The server gets its own
// process group (its own session when detached) so a Ctrl-C on the terminal reaches only
// queen-go, which then shuts PostgreSQL down in order.
func sysProcAttr(a *account, server, detached bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if a != nil {
		groups := make([]uint32, 0, len(a.groups))
		for g := range a.groups {
			groups = append(groups, g)
		}
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: groups}
	}
	if server {
		if detached {
			attr.Setsid = true
		} else {
			attr.Setpgid = true
			setParentDeathSignal(attr)
		}
	}
	return attr
}

// chown hands a file or directory created by root over to the account.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
}

// adopt gives path to the account when it belongs to root: a new $QUEEN_DATA_DIR or log, or
// one an older queen-go left owned by root. Files of other users are left alone.
func (a *account) adopt(path string) error {
	if a == nil {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
		return a.chown(path)
	}
	return nil
}

// owns reports whether path belongs to the account (always true for the current user).
func (a *account) owns(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return a == nil || !ok || st.Uid == a.uid
}

// checkTraversable fails, naming the directory, when the postgres user cannot enter dir or one
// of its parents: initdb and postgres would otherwise fail with a far less helpful message.
func (a *account) checkTraversable(dir string) error {
	if a == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !a.canSearch(fi) {
			return fmt.Errorf("the %s user, which runs the embedded PostgreSQL, cannot enter %s (mode %v); "+
				"make it searchable (chmod o+x %s) or choose a QUEEN_DATA_DIR elsewhere", a.name, d, fi.Mode().Perm(), d)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// canSearch applies the classic owner/group/other permission rule for the execute bit.
func (a *account) canSearch(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case a.groups[st.Gid]:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// processAlive reports whether a process with this id exists and could be our server. A
// process we may not signal (EPERM) belongs to another user, so it is not a server we started,
// the same conclusion PostgreSQL draws.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// quitSignal asks the postmaster for an immediate shutdown, the last resort before SIGKILL.
var quitSignal os.Signal = syscall.SIGQUIT
