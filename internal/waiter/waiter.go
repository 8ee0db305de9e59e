// Package waiter parks long-polling pops in memory, without a database connection, until a
// write signals their queue (docs/api/operations.md §3).
package waiter

import (
	"cmp"
	"slices"
	"sync"
)

// Signal says that a queue may have become deliverable. Namespace and Task are known only
// when the signal came through PostgreSQL NOTIFY (HasLabels).
type Signal struct {
	// Tenant is the queue's tenant: a signal wakes no pop of another tenant.
	Tenant                 string
	Queue, Namespace, Task string
	HasLabels              bool
	// Wake bounds how many parked pops the signal wakes, oldest first; 0 wakes them all.
	// A released lease frees one partition for one pop: waking every waiter for it would
	// send all of them to the database for one of them to win.
	Wake int
}

// Filter says which signals wake a parked pop: a queue pop names Queue; a namespace/task pop
// names Namespace and/or Task (empty = any).
type Filter struct {
	Tenant                 string
	Queue, Namespace, Task string
	ByLabels               bool
}

func (f Filter) matches(s Signal) bool {
	if f.Tenant != s.Tenant {
		return false
	}
	if !f.ByLabels {
		return f.Queue == s.Queue
	}
	return s.HasLabels && (f.Namespace == "" || f.Namespace == s.Namespace) && (f.Task == "" || f.Task == s.Task)
}

// Hub holds the parked pops of one broker instance.
type Hub struct {
	mu      sync.Mutex
	seq     uint64
	waiters map[*Waiter]struct{}
	closed  chan struct{}
	once    sync.Once
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{waiters: make(map[*Waiter]struct{}), closed: make(chan struct{})}
}

// Waiter is one parked pop. C receives (at most one buffered) wake-up; Done closes on shutdown.
type Waiter struct {
	C      chan struct{}
	filter Filter
	hub    *Hub
	seq    uint64 // arrival order
	idle   bool   // between attempts, waiting for a wake-up (Idle); guarded by hub.mu
}

// Park registers a waiter. Register before the attempt that may find nothing, so a write
// committed between the attempt and the wait is not missed; call Leave when done.
func (h *Hub) Park(f Filter) *Waiter {
	w := &Waiter{C: make(chan struct{}, 1), filter: f, hub: h}
	h.mu.Lock()
	h.seq++
	w.seq = h.seq
	h.waiters[w] = struct{}{}
	h.mu.Unlock()
	return w
}

// Leave unregisters the waiter.
func (w *Waiter) Leave() {
	w.hub.mu.Lock()
	delete(w.hub.waiters, w)
	w.hub.mu.Unlock()
}

// Wake wakes the waiters whose filter matches s: all of them, or the s.Wake oldest that are
// not already due to wake (parked pops are served in arrival order).
func (h *Hub) Wake(s Signal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.Wake <= 0 {
		for w := range h.waiters {
			if w.filter.matches(s) {
				notify(w)
			}
		}
		return
	}
	var due []*Waiter
	for w := range h.waiters {
		if w.filter.matches(s) && len(w.C) == 0 {
			due = append(due, w)
		}
	}
	slices.SortFunc(due, func(a, b *Waiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range due[:min(s.Wake, len(due))] {
		notify(w)
	}
}

// WakeAll wakes every waiter, e.g. after the notification listener reconnected and may have
// missed signals.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters {
		notify(w)
	}
}

// Parked is the number of waiters.
func (h *Hub) Parked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters)
}

// Idle marks the waiter as between attempts, waiting for a wake-up, until the returned
// function is called. A write made while a pop is idle can reach it only as a wake-up, which
// is what the long-poll tests wait for (Idle counts).
func (w *Waiter) Idle() (busy func()) {
	w.set(true)
	return func() { w.set(false) }
}

func (w *Waiter) set(idle bool) {
	w.hub.mu.Lock()
	w.idle = idle
	w.hub.mu.Unlock()
}

// Idle is the number of waiters between attempts, waiting for a wake-up.
func (h *Hub) Idle() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for w := range h.waiters {
		if w.idle {
			n++
		}
	}
	return n
}

// Close tells every parked pop, now and later, to answer at once (shutdown).
func (h *Hub) Close() { h.once.Do(func() { close(h.closed) }) }

// Closed is closed once the hub shuts down.
func (h *Hub) Closed() <-chan struct{} { return h.closed }

func notify(w *Waiter) {
	select {
	case w.C <- struct{}{}:
	default: // a wake-up is already pending
	}
}
