//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the exclusive lock of a spool directory: flock on its lock file. The lock
// belongs to the open file, so a second Open fails even within one process, and the kernel
// drops it when the process dies, so a crash leaves no stale lock behind.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("spool: lock %s: %w", path, err)
	}
	return f, nil
}
