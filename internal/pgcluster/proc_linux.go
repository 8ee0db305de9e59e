package pgcluster

import "syscall"

// setDeathSignal makes the kernel send sig to the server when the test process dies without
// stopping it, so no server outlives its test run.
func setDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }
