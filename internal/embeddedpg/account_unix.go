//go:build unix

package embeddedpg

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// account is the system user PostgreSQL runs as when queen-go runs as root, because
// PostgreSQL refuses to run as root. A nil *account means "run as the current user".
type account struct {
	name     string
	uid, gid uint32
	groups   map[uint32]bool // primary and supplementary groups
}

// serviceAccount returns the postgres system user when the process runs as root, nil otherwise.
func serviceAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	const name = "postgres"
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("queen-go runs as root and PostgreSQL refuses to run as root, "+
			"but there is no %q system user to run the embedded server as (%v); "+
			"create that user (the postgresql package does) or run queen-go as an ordinary user", name, err)
	}
	a := &account{name: name, groups: map[uint32]bool{}}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
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

// chown hands a directory created by root over to the postgres user.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
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
