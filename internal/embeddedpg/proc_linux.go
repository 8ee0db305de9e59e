package embeddedpg

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setParentDeathSignal makes the kernel send the postmaster SIGINT (fast shutdown) when
// queen-go dies without stopping it, e.g. after SIGKILL, so the next start does not find the
// data directory held by an orphaned server.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGINT
}

// processName returns the command name of a process, used to tell a PostgreSQL server from an
// unrelated process that got the PID of a crashed one.
func processName(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}
