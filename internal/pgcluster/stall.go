package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// StallReplication stops (SIGSTOP) the walsender that streams c's WAL to standby. From then
// on no WAL of c reaches the standby, and neither side notices: the replication connection
// stays open and silent, the walsender's own timeout cannot run in a stopped process, and the
// standby's wal_receiver_timeout (60 s) is far longer than a test. What follows depends only
// on the replication mode: with an asynchronous standby, commits go on and exist on c alone;
// with a synchronous one, every commit waits for the standby and is never acknowledged.
//
// The stall lasts until Crash, which ends the stopped walsender before it sends anything (as
// the immediate shutdown's own SIGKILL of recalcitrant children would, 5 s later), or Stop,
// which resumes it so that the server can shut down.
func (c *Cluster) StallReplication(ctx context.Context, standby *Cluster) error {
	var pid int
	err := c.QueryRow(ctx, `SELECT pid FROM pg_stat_replication
		WHERE application_name = $1 AND state = 'streaming'`, standby.Name).Scan(&pid)
	if err != nil {
		return fmt.Errorf("pgcluster: the walsender of %s on %s: %w", standby.Name, c.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgcluster: stop walsender %d: %w", pid, err)
	}
	c.stalled = append(c.stalled, pid)
	return nil
}

// endStalled kills every walsender StallReplication stopped, once the postmaster has sent it
// the immediate shutdown's SIGQUIT (pending while it is stopped). Waiting for that signal keeps
// the crash a crash: a backend killed earlier would make the postmaster restart the server, and
// a walsender merely resumed could still send WAL before it handles the SIGQUIT.
func (c *Cluster) endStalled(shutdownDone <-chan struct{}) error {
	defer func() { c.stalled = nil }()
	deadline := time.Now().Add(stopTimeout)
	for _, pid := range c.stalled {
		for {
			pending, err := signalPending(pid, syscall.SIGQUIT)
			if errors.Is(err, syscall.ESRCH) {
				break // the postmaster killed it already
			}
			if err != nil {
				return fmt.Errorf("pgcluster: walsender %d: %w", pid, err)
			}
			if pending {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("pgcluster: kill walsender %d: %w", pid, err)
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pgcluster: walsender %d received no SIGQUIT within %v", pid, stopTimeout)
			}
			select {
			case <-shutdownDone:
				return nil
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// resumeStalled resumes every walsender StallReplication stopped (SIGCONT), so that a
// shutdown that is not a crash can end it.
func (c *Cluster) resumeStalled() {
	for _, pid := range c.stalled {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	c.stalled = nil
}
