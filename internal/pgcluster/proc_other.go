//go:build !linux

package pgcluster

import "syscall"

// setDeathSignal has no equivalent outside Linux: a server there outlives a test process that
// dies without stopping it.
func setDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}

// signalPending cannot see pending signals outside Linux; it reports the process gone once
// it is, so that a stalled walsender is left to the immediate shutdown's own SIGKILL.
func signalPending(pid int, _ syscall.Signal) (bool, error) {
	if err := syscall.Kill(pid, 0); err != nil {
		return false, syscall.ESRCH
	}
	return false, nil
}
