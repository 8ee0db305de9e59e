package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/spool"
)

// openSpool takes the file buffer (FILE_BUFFER_DIR, docs/api/operations.md §4.1–4.2) and wires
// it: the broker spools the pushes the database cannot take, and a drainer replays them through
// the broker's push path while the database answers and push maintenance is off. The figures
// reach /health, /api/v1/status/buffers and the Prometheus gauges.
//
// The directory is taken in New, not Start, so that a second instance pointed at it refuses to
// start at once, before it binds its port: two writers would replay each other's records.
func (a *App) openSpool() error {
	cfg := a.cfg
	sp, err := spool.Open(cfg.FileBufferDir, spool.Options{EventsPerFile: cfg.FileBufferEventsPerFile,
		Logger: a.Logger(), Clock: a.opts.clock})
	switch {
	case errors.Is(err, spool.ErrLocked):
		return fmt.Errorf("file buffer %s is in use by another queen-go instance (FILE_BUFFER_DIR must be one per instance): %w",
			cfg.FileBufferDir, err)
	case err != nil:
		return fmt.Errorf("file buffer %s: %w", cfg.FileBufferDir, err)
	}
	a.spool = sp
	a.drainer = spool.NewDrainer(sp, spool.DrainerOptions{
		Write:         a.broker.Replay,
		Slow:          func(err error) bool { return errors.Is(err, mq.ErrBusy) },
		WriteSlow:     a.broker.ReplaySlow,
		Ready:         a.replayReady,
		FlushInterval: cfg.FileBufferFlushInterval,
		MaxBatch:      cfg.FileBufferMaxBatch,
		Logger:        a.Logger(),
		Clock:         a.opts.clock,
	})
	a.broker.AttachSpool(sp, a.drainer.Kick)
	if a.migrated {
		// The database answers: a spool of another database's pushes stops the start.
		var owner *spool.OwnerError
		if err := a.claimSpool(context.Background()); errors.As(err, &owner) {
			sp.Close()
			return err
		}
	}
	a.metrics.SetFileBuffer(a.fileBuffer)
	if n := sp.Pending(); n > 0 {
		a.Logger().Info("file buffer holds pushes from an earlier run; replaying them in the background",
			"dir", cfg.FileBufferDir, "pending", n)
	}
	return nil
}

// replayReady is the drainer's gate: push maintenance is off and the database answers (a busy
// broker's included: the outage probe reached it). It is
// consulted only while the spool holds records, so an idle broker pings nothing; the ping is
// bounded by DB_CONNECTION_TIMEOUT, like /health's.
func (a *App) replayReady() bool {
	if a.broker.PushMaintenance() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.DBConnectionTimeout)
	defer cancel()
	if !a.spoolOwned.Load() {
		var owner *spool.OwnerError
		switch err := a.claimSpool(ctx); {
		case errors.As(err, &owner):
			a.ownerRefused.Do(func() {
				a.Logger().Error("file buffer not replayed: it belongs to another database", "err", err)
			})
			return false
		case err != nil:
			return false
		}
	}
	err := a.store.Ping(ctx)
	return err == nil || errors.Is(err, mq.ErrBusy) // busy: the database is there

}

// claimSpool checks that the spool's pending pushes were written for this broker's database
// (docs/api/operations.md §4.2) and records it as their owner; a *spool.OwnerError says they
// were not. Until it succeeds, nothing is replayed.
func (a *App) claimSpool(ctx context.Context) error {
	system, database, err := a.store.Identity(ctx)
	if err != nil {
		return err
	}
	if err := a.spool.Claim(spool.Owner{System: system, Database: database, Schema: a.store.Schema()}); err != nil {
		return err
	}
	a.spoolOwned.Store(true)
	return nil
}

// fileBuffer is the spool's figures: records not yet replayed, and those of a failing batch.
func (a *App) fileBuffer() (pending, failed int) {
	s := a.drainer.Stats()
	return s.Pending, s.Failed
}

// Spool is the instance's file buffer.
func (a *App) Spool() *spool.Spool { return a.spool }

// Drainer is the instance's spool replay.
func (a *App) Drainer() *spool.Drainer { return a.drainer }
