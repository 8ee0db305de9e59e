package app

import (
	"context"
	"errors"
	"fmt"

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
		Ready:         a.replayReady,
		FlushInterval: cfg.FileBufferFlushInterval,
		MaxBatch:      cfg.FileBufferMaxBatch,
		Logger:        a.Logger(),
		Clock:         a.opts.clock,
	})
	a.broker.AttachSpool(sp, a.drainer.Kick)
	a.metrics.SetFileBuffer(a.fileBuffer)
	if n := sp.Pending(); n > 0 {
		a.Logger().Info("file buffer holds pushes from an earlier run; replaying them in the background",
			"dir", cfg.FileBufferDir, "pending", n)
	}
	return nil
}

// replayReady is the drainer's gate: push maintenance is off and the database answers. It is
// consulted only while the spool holds records, so an idle broker pings nothing; the ping is
// bounded by DB_CONNECTION_TIMEOUT, like /health's.
func (a *App) replayReady() bool {
	if a.broker.PushMaintenance() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.DBConnectionTimeout)
	defer cancel()
	return a.store.Ping(ctx) == nil
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
