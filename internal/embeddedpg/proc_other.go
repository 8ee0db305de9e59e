//go:build unix && !linux

package embeddedpg

import "syscall"

// setParentDeathSignal does nothing: only Linux can signal a child when its parent dies.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// processName is unknown without /proc; callers then treat a live PID as a live server.
func processName(int) (string, bool) { return "", false }
