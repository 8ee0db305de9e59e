// Package broker holds the domain operations of queen-go — push, pop (with long polling),
// ack, lease extension and queue configuration — over the store. It knows nothing of HTTP:
// it takes typed requests and returns typed results and errors.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/lifecycle"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// Config holds the broker's defaults and long-poll tuning.
type Config struct {
	DefaultSubscriptionMode string        // "", all, new or new-only
	PollInitial             time.Duration // first fallback re-check of a parked pop (at most PollMax)
	// PollMax is the longest fallback interval; zero means 1 s. The API reference's 1 s ceiling
	// (POP_WAIT_MAX_INTERVAL_MS, docs/api/operations.md §3) is applied by the config layer, so a larger
	// value reaches the broker only when set explicitly: tests only, to slow the fallback
	// down far enough to prove that a wake-up came from a signal and not from polling.
	PollMax time.Duration
	// EncryptionKey is the loaded QUEEN_ENCRYPTION_KEY, nil when none.
	EncryptionKey *encryption.Key
	// PushCalls bounds concurrent database calls for pushes (default: the CPU count, at least
	// 2: pushes are CPU-bound in the database, and more calls than cores only shrink the
	// coalesced batches and add lock contention, as bench/HISTORY.md measures); requests arriving
	// while all are busy are coalesced into the next call of at most PushCallItems items
	// (default 3000: requests over many partitions share them, so their calls run one at a
	// time, and a call's cost per partition is paid once per call; bench/HISTORY.md, "Larger
	// push calls"). See coalescer.
	PushCalls, PushCallItems int
	// ConsumeCalls bounds the pops, acks and transactions running in the database at once
	// (CONSUME_CONCURRENCY; default: one per CPU, at least 2). More wait in the broker, within
	// DB_CONNECTION_TIMEOUT like a wait for a pooled connection. See callGate.
	ConsumeCalls int
	// ConsumeWait is how long a call waits for a consume-gate slot before it goes in without
	// one (default 250 ms). The slots bound calls that use CPU; a slot holder that is waiting
	// on a row lock (an ack behind a queue deletion, say) uses none, and without this bound a
	// few of them would hold up every consumer of every queue, and fail those that wait past
	// DB_CONNECTION_TIMEOUT. The pool still bounds the calls that go in.
	ConsumeWait time.Duration
	// WithoutListener leaves the notification listener off, so this instance hears only its
	// own wake-ups: tests use it to prove a wake-up was local.
	WithoutListener bool
	// Recorder counts operations for the metrics; nil records nothing.
	Recorder Recorder
	// Tracer starts the operation and database spans (OpenTelemetry, tracing.go); nil: a no-op
	// tracer.
	Tracer trace.Tracer
	// LimitRefused counts a request refused by a tenant limit, by tenant label (the tenant when
	// the limits name it, else OtherTenants) and limit (mq.LimitQueues, …); nil counts nothing.
	LimitRefused func(tenant, limit string)
}

// Broker is the domain layer. Safe for concurrent use. It serves between Start and Stop: its
// push coalescer, signaler, pop gate and notification listener are lifecycle parts, and a
// broker that is not running refuses pushes and pops with ErrUnavailable.
type Broker struct {
	// StartStop owns the notification listener's goroutine.
	lifecycle.StartStop

	store   *store.Store
	sealer  sealer
	pushes  *coalescer
	signals *signaler
	popGate *callGate
	// consumeGate holds every pop attempt, ack and transaction to ConsumeCalls at once.
	consumeGate *callGate
	// pops, acks and txns merge the requests waiting at the consume gate into shared calls (merge.go).
	pops  *merger[popReq]
	acks  *merger[ackReq]
	txns  *merger[txnReq]
	hub   *waiter.Hub
	modes modes // the maintenance flags (maintenance.go)
	// limits are the tenants' limits as last read, and the push-rate buckets (limits.go).
	limits limiter
	// spooling is the file buffer a push goes to when the database is unavailable.
	spooling spooling
	cfg      Config
	log      *slog.Logger
}

// New returns a broker over st; Start makes it serve. hub may be shared with the metrics.
func New(st *store.Store, hub *waiter.Hub, cfg Config, log *slog.Logger) *Broker {
	cfg.DefaultSubscriptionMode, _ = mq.NormalizeSubscriptionMode(cfg.DefaultSubscriptionMode)
	if cfg.PollMax <= 0 {
		cfg.PollMax = time.Second
	}
	if cfg.PollInitial <= 0 {
		cfg.PollInitial = 100 * time.Millisecond
	}
	cfg.PollInitial = min(cfg.PollInitial, cfg.PollMax)
	if log == nil {
		log = slog.Default()
	}
	if cfg.PushCallItems <= 0 {
		cfg.PushCallItems = 3000
	}
	if cfg.PushCalls <= 0 {
		cfg.PushCalls = max(2, runtime.NumCPU())
	}
	if cfg.ConsumeCalls <= 0 {
		// One per CPU: requests that wait are merged into the next call (merge.go), so fewer
		// slots mean larger calls, and on 2 cores 2 slots beat 4 on every single-message row
		// (bench/HISTORY.md, "Group commit for consumers").
		cfg.ConsumeCalls = max(2, runtime.NumCPU())
	}
	if cfg.ConsumeWait <= 0 {
		cfg.ConsumeWait = 250 * time.Millisecond
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noopTracer
	}
	return &Broker{store: st, hub: hub, cfg: cfg, log: log, sealer: sealer{key: cfg.EncryptionKey},
		pushes: &coalescer{write: st.Push, maxItems: cfg.PushCallItems, maxInflight: cfg.PushCalls, timeout: time.Minute,
			waitDeadline: st.WaitDeadline, judge: st.Judge, outage: st.OutageBegun, log: log},
		signals: &signaler{notify: st.NotifyQueues, timeout: 5 * time.Second, gap: signalGap, kick: make(chan struct{}, 1)},
		popGate: &callGate{size: 4, outage: st.OutageBegun}, consumeGate: &callGate{size: cfg.ConsumeCalls, outage: st.OutageBegun},
		modes: newModes(),
		pops:  newPopMerger(), acks: newAckMerger(), txns: newTxnMerger()}
}

// errStopped answers work a broker refuses because it is not running: for the wire, the
// broker is as unavailable as its database.
var errStopped = fmt.Errorf("%w: %w", mq.ErrUnavailable, lifecycle.ErrStopped)

// Start starts the signaler, the push coalescer and the pop gate, reads the maintenance
// modes, then starts their fallback reader and the notification listener, which relays
// cross-instance wake-ups and maintenance changes from PostgreSQL on a connection of its own
// until Stop.
func (b *Broker) Start(ctx context.Context) error {
	return b.StartWith(ctx, func(ctx context.Context) error {
		if err := lifecycle.StartAll(ctx, b.parts()...); err != nil {
			return err
		}
		b.loadMaintenance(ctx)
		b.loadLimits(ctx)
		b.Go(b.watchMaintenance)
		if !b.cfg.WithoutListener {
			b.Go(b.listen)
		}
		return nil
	})
}

// Stop closes the pop gate, writes the pushes already accepted, sends their signals and ends
// the listener; it returns once every goroutine of the broker has ended. The hub is not
// closed here: it belongs to whoever built the broker.
func (b *Broker) Stop() {
	lifecycle.StopAll(b.parts()...)
	b.StartStop.Stop()
}

// listen relays cross-instance wake-ups from PostgreSQL to parked pops, and maintenance
// changes to the broker's flags, until ctx ends. After a reconnect, anything may have been
// missed: every parked pop retries and the flags are read again.
func (b *Broker) listen(ctx context.Context) {
	b.store.Listen(ctx, b.log, store.Listeners{
		Signal: func(s store.QueueSignal) {
			b.hub.Wake(waiter.Signal{Tenant: s.Tenant, Queue: s.Queue, Namespace: s.Namespace, Task: s.Task, HasLabels: true})
		},
		Maintenance: b.applyMaintenance,
		Reconnect: func() {
			b.hub.WakeAll()
			b.rereadMaintenance()
		},
	})
}

// parts lists the broker's lifecycle parts in start order; the signaler comes first because
// pushes signal after they commit.
func (b *Broker) parts() []lifecycle.Service {
	return []lifecycle.Service{b.signals, b.pushes, b.popGate, b.consumeGate}
}

// consumeSlot waits for a consume-gate slot, or goes in without one once it has waited
// ConsumeWait (see Config), or gives up with errAborted when abort is closed (a merged call
// took the request). A wait that ends first (the request's wait deadline passed, an outage
// began, the broker stopped) is answered and counted like a failed database call (gateError).
func (b *Broker) consumeSlot(ctx context.Context, abort <-chan struct{}) (leave func(), err error) {
	deadline := b.store.WaitDeadline(ctx)
	through := time.Now().Add(b.cfg.ConsumeWait)
	until, beside := deadline, through.Before(deadline)
	if beside {
		until = through
	}
	leave, err = b.consumeGate.enterOr(ctx, "", until, abort)
	if errors.Is(err, errGateTimeout) && beside {
		leave, err = func() {}, nil // the slot holders are stalled: go in beside them
	}
	if err != nil {
		return nil, b.gateError(ctx, err)
	}
	return leave, nil
}

// gateError answers a wait in front of the database that ended without a slot: past its
// deadline, the store asks the outage probe whether that was load (ErrBusy) or an outage
// (ErrUnavailable); either way the request is marked for the outage summary or the overload
// counter.
func (b *Broker) gateError(ctx context.Context, err error) error {
	if errors.Is(err, errGateTimeout) {
		return b.store.Judge(ctx, err)
	}
	budget.Mark(ctx, err)
	return err
}

// Hub is the broker's parked-pop registry.
func (b *Broker) Hub() *waiter.Hub { return b.hub }

// Ping checks the database.
func (b *Broker) Ping(ctx context.Context) error { return b.store.Ping(ctx) }

// newID mints a UUIDv7; ids minted by one process are monotonic.
func newID() string { return uuid.Must(uuid.NewV7()).String() }
