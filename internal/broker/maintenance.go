package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// The maintenance modes (docs/api/operations.md §4.4) live in the database; every instance
// keeps the last state it knows in memory, because the data path asks "is pop maintenance
// on?" on every pop and must not pay a database call for it. They belong to the broker, not a
// package of their own: their only effects are on the data path (pops answer 204, pushes are
// refused), a change must wake the broker's parked pops, and they travel between instances on
// the broker's notification listener.
//
// An instance learns a change three ways, whichever comes first: its own write (at once), the
// NOTIFY the write commits (every instance, well within 1 s), and a fallback read every
// maintenancePoll (a notification lost with the listener's connection, or no listener at
// all). It re-reads at start and when the listener reconnects. States carry a version bumped
// by every change, and an older one never replaces a newer one, so a fallback read that raced
// a notification cannot flip a flag back.

// maintenancePoll is the fallback re-read interval: the reference's bound for a change to
// reach every instance is 1 s (docs/api/admin-api.md §9), so it is what a lost notification
// may cost. One single-row read per second per instance is negligible.
const maintenancePoll = time.Second

// maintenanceReadTimeout bounds one read of the flags at start, so a database that does not
// answer delays nothing: the fallback read keeps trying.
const maintenanceReadTimeout = time.Second

// modes is the in-memory state: last known flags and the fallback reader's kick.
type modes struct {
	cur  atomic.Pointer[mq.MaintenanceState] // nil: nothing read yet, both modes off
	kick chan struct{}                       // (at most one buffered) request to re-read now
}

func newModes() modes { return modes{kick: make(chan struct{}, 1)} }

// PushMaintenance reports whether push maintenance is on, as this instance last heard. The
// push path consults it before every push (see push).
func (b *Broker) PushMaintenance() bool {
	m := b.modes.cur.Load()
	return m != nil && m.Push
}

// PopMaintenance reports whether pop maintenance is on, as this instance last heard; while it
// is, every pop answers empty at once.
func (b *Broker) PopMaintenance() bool {
	m := b.modes.cur.Load()
	return m != nil && m.Pop
}

// Maintenance is the last known state of both modes, without a database call.
func (b *Broker) Maintenance() mq.MaintenanceState {
	if m := b.modes.cur.Load(); m != nil {
		return *m
	}
	return mq.MaintenanceState{}
}

// ReadMaintenance reads both modes from the database, and takes them as the instance's state
// when they are newer. Without a database it returns the last known state with the error
// (the GET routes answer with it, docs/api/operations.md §4.3).
func (b *Broker) ReadMaintenance(ctx context.Context) (mq.MaintenanceState, error) {
	m, err := b.store.MaintenanceModes(ctx)
	if err != nil {
		return b.Maintenance(), err
	}
	b.applyMaintenance(m)
	return m, nil
}

// SetMaintenance turns one mode on or off in the database, for every instance; by is the
// token's sub (nil without authentication), on this instance's WORKER_ID. This instance
// applies the change at once, the others when its notification arrives.
func (b *Broker) SetMaintenance(ctx context.Context, mode mq.MaintenanceMode, enabled bool, by *string, on string) (mq.MaintenanceState, error) {
	m, err := b.store.SetMaintenanceMode(ctx, mode, enabled, by, on)
	if err != nil {
		return mq.MaintenanceState{}, err
	}
	b.applyMaintenance(m)
	return m, nil
}

// applyMaintenance takes m as the current state unless a newer one is already held. When pop
// maintenance changes, every parked pop is woken: turning on, they see it and answer 204;
// turning off is a wake-up like any other that makes work deliverable (docs/api/operations.md §3).
func (b *Broker) applyMaintenance(m mq.MaintenanceState) {
	for {
		old := b.modes.cur.Load()
		if old != nil && (m.Version < old.Version || m.Version == old.Version && (m.ChangedAt == nil || old.ChangedAt != nil)) {
			return // older, or the same change with no more detail than held
		}
		if !b.modes.cur.CompareAndSwap(old, &m) {
			continue
		}
		var was mq.MaintenanceState
		if old != nil {
			was = *old
		}
		if was.Push != m.Push || was.Pop != m.Pop {
			b.log.Info("maintenance modes changed", "push", m.Push, "pop", m.Pop, "version", m.Version)
		}
		if was.Pop != m.Pop {
			b.hub.WakeAll()
		}
		return
	}
}

// rereadMaintenance asks the fallback reader to read the flags now (listener reconnected).
func (b *Broker) rereadMaintenance() {
	select {
	case b.modes.kick <- struct{}{}:
	default: // a re-read is already pending
	}
}

// loadMaintenance reads the flags once, within maintenanceReadTimeout; a failure is left to
// the fallback reader.
func (b *Broker) loadMaintenance(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, maintenanceReadTimeout)
	defer cancel()
	if _, err := b.ReadMaintenance(ctx); err != nil && ctx.Err() == nil {
		b.log.Debug("reading the maintenance modes", "err", err)
	}
}

// watchMaintenance is the fallback reader: it re-reads the flags (and the tenants' limits)
// every maintenancePoll, or at once when kicked, until ctx ends.
func (b *Broker) watchMaintenance(ctx context.Context) {
	t := time.NewTicker(maintenancePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.modes.kick:
		}
		b.loadMaintenance(ctx)
		b.loadLimits(ctx) // the tenants' limits, for the push rate (limits.go)
	}
}
