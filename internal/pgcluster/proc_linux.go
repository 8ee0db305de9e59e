package pgcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal makes the kernel send sig to the server when the test process dies without
// stopping it, so no server outlives its test run.
func setDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }

// signalPending reports whether sig is pending for process pid (in the SigPnd or ShdPnd mask
// of /proc/<pid>/status); syscall.ESRCH when the process is gone.
func signalPending(pid int, sig syscall.Signal) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return false, syscall.ESRCH
	}
	if err != nil {
		return false, err
	}
	bit := uint64(1) << (uint(sig) - 1)
	for line := range strings.Lines(string(b)) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name != "SigPnd" && name != "ShdPnd" {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err != nil {
			return false, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		if mask&bit != 0 {
			return true, nil
		}
	}
	return false, nil
}
