//go:build !linux

package pgcluster

import "syscall"

// setDeathSignal has no equivalent outside Linux: a server there outlives a test process that
// dies without stopping it.
func setDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
