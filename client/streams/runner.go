package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	queen "github.com/queen-go/queen/client"
)

// RunOptions configure a runner.
type RunOptions struct {
	// QueryID is the durable name of the query (required): its state and its consumer group
	// ("streams.<QueryID>") belong to it. Runners of one QueryID share the work by partition.
	QueryID string
	// BatchSize is the most messages one pop takes (default 200).
	BatchSize int
	// MaxPartitions is the most partitions one pop leases (default 4).
	MaxPartitions int
	// MaxWait is the long poll of a pop (default 1 s).
	MaxWait time.Duration
	// SubscriptionMode and SubscriptionFrom place the group's cursor on its first pop.
	SubscriptionMode queen.SubscriptionMode
	SubscriptionFrom string
	// ConsumerGroup overrides "streams.<QueryID>".
	ConsumerGroup string
	// Reset consents to wiping the query's state when the chain (config_hash) changed. With
	// an unchanged chain it does nothing.
	Reset bool
	// OnError is told about every failed step; the runner goes on (a failed cycle leaves its
	// batch leased: it comes back when the lease expires). Phase is pop, cycle or flush.
	OnError func(err error, phase string)
}

// Metrics counts what a runner did.
type Metrics struct {
	Cycles, FlushCycles, Messages, PushItems, StateOps int64
	LateEvents, Errors, GateAllows, GateDenials        int64
	// RolledBack counts cycles the broker answered success:false (nothing applied).
	RolledBack int64
	LastError  string
}

// Runner executes a compiled stream: pop, process, commit one cycle per partition; and, for
// windows, an idle flush that closes ripe windows of quiet partitions.
type Runner struct {
	c       *queen.Client
	src     queen.Queue
	st      *compiled
	opts    RunOptions
	group   string
	queryID string

	mu     sync.Mutex
	m      Metrics
	wm     map[string]int64     // event-time watermark per partition id
	recent map[string]recentPar // partitions popped lately, for the idle flush
	cancel context.CancelFunc
	done   chan struct{}
}

type recentPar struct {
	name string
	seen time.Time
}

// recentFor is how long a partition stays in the idle flush's list after its last pop.
const recentFor = 5 * time.Minute

// Run registers the query (POST /streams/v1/queries) and starts the runner in the
// background. A chain that changed under the same QueryID without Reset fails with an error
// matching queen.ErrConfigHashMismatch. Stop the runner with Stop; cancelling ctx stops it too.
func (s *Stream) Run(ctx context.Context, o RunOptions) (*Runner, error) {
	if o.QueryID == "" {
		return nil, errors.New("streams: RunOptions.QueryID is required")
	}
	st, err := s.compile()
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	if s.source.Client() == nil {
		return nil, errors.New("streams: the source queue has no client (build it with Client.Queue)")
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 200
	}
	if o.MaxPartitions <= 0 {
		o.MaxPartitions = 4
	}
	if o.MaxWait <= 0 {
		o.MaxWait = time.Second
	}
	r := &Runner{c: s.source.Client(), src: s.source.Client().Queue(s.source.Name()), st: st, opts: o,
		group: o.ConsumerGroup, wm: map[string]int64{}, recent: map[string]recentPar{}, done: make(chan struct{})}
	if r.group == "" {
		r.group = "streams." + o.QueryID
	}
	reg := queen.StreamRegistration{Name: o.QueryID, SourceQueue: s.source.Name(), ConfigHash: st.hash, Reset: o.Reset}
	if st.sink != nil && st.sink.kind == "sink" {
		reg.SinkQueue = st.sink.sinkQueue.Name()
	}
	ans, err := r.c.RegisterStreamQuery(ctx, reg)
	if err != nil {
		return nil, fmt.Errorf("streams: register %q: %w", o.QueryID, err)
	}
	r.queryID = ans.QueryID
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.loop(runCtx) }()
	if st.window != nil && st.window.win.idleFlushMs > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.flushLoop(runCtx, time.Duration(st.window.win.idleFlushMs)*time.Millisecond)
		}()
	}
	go func() { wg.Wait(); close(r.done) }()
	return r, nil
}

// QueryID is the broker's id of the registered query.
func (r *Runner) QueryID() string { return r.queryID }

// ConsumerGroup is the group the runner pops with.
func (r *Runner) ConsumerGroup() string { return r.group }

// ConfigHash is the config_hash the runner registered.
func (r *Runner) ConfigHash() string { return r.st.hash }

// Stop ends the runner and waits for the cycle in hand to finish (it is committed or not;
// an uncommitted batch comes back after its lease).
func (r *Runner) Stop() {
	r.cancel()
	<-r.done
}

// Done is closed when the runner has stopped.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Metrics returns a snapshot of the counters.
func (r *Runner) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m
}

func (r *Runner) fail(err error, phase string) {
	r.mu.Lock()
	r.m.Errors++
	r.m.LastError = phase + ": " + err.Error()
	r.mu.Unlock()
	if r.opts.OnError != nil {
		r.opts.OnError(err, phase)
	}
}

func (r *Runner) count(f func(m *Metrics)) {
	r.mu.Lock()
	f(&r.m)
	r.mu.Unlock()
}

// loop pops and processes until ctx ends. Cycles of one pop run one partition after the other
// (each acks with the pop's lease, docs/api/streams.md S40).
func (r *Runner) loop(ctx context.Context) {
	for ctx.Err() == nil {
		b, err := r.src.Pop(ctx, queen.PopOptions{Batch: r.opts.BatchSize, Wait: r.opts.MaxWait,
			ConsumerGroup: r.group, Partitions: r.opts.MaxPartitions,
			SubscriptionMode: r.opts.SubscriptionMode, SubscriptionFrom: r.opts.SubscriptionFrom})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.fail(err, "pop")
			pause(ctx, 500*time.Millisecond)
			continue
		}
		if b.Empty() {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		for _, g := range groupByPartition(b) {
			r.mu.Lock()
			r.recent[g.id] = recentPar{name: g.name, seen: time.Now()}
			r.mu.Unlock()
			if err := r.process(ctx, g); err != nil {
				r.fail(err, "cycle")
			}
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// partGroup is the messages of one partition in one pop, in position order.
type partGroup struct {
	id, name, lease string
	msgs            []*queen.Message
}

// groupByPartition splits a pop by partition (first appearance order) and sorts each group
// by (createdAt in ms, id), which is position order (docs/api/streams.md §7).
func groupByPartition(b *queen.Batch) []*partGroup {
	var out []*partGroup
	idx := map[string]*partGroup{}
	for _, m := range b.Messages {
		g := idx[m.PartitionID]
		if g == nil {
			lease := m.LeaseID
			if lease == "" {
				lease = b.LeaseID
			}
			g = &partGroup{id: m.PartitionID, name: m.Partition, lease: lease}
			idx[m.PartitionID] = g
			out = append(out, g)
		}
		g.msgs = append(g.msgs, m)
	}
	for _, g := range out {
		sort.SliceStable(g.msgs, func(i, j int) bool {
			a, b := g.msgs[i].CreatedAt.UnixMilli(), g.msgs[j].CreatedAt.UnixMilli()
			if a != b {
				return a < b
			}
			return g.msgs[i].ID < g.msgs[j].ID
		})
	}
	return out
}

// record is the user-facing view of an envelope.
func (g *partGroup) record(e envelope) Record {
	return Record{Value: e.value, Key: e.key, Message: e.msg, PartitionID: g.id, Partition: g.name}
}

// applyStage runs one map/filter/flatMap over envelopes.
func applyStage(op *operator, envs []envelope, rec func(envelope) Record) ([]envelope, error) {
	out := make([]envelope, 0, len(envs))
	for _, e := range envs {
		r := rec(e)
		switch op.kind {
		case "map":
			v, err := op.mapFn(r)
			if err != nil {
				return nil, fmt.Errorf("map: %w", err)
			}
			e.value = v
			out = append(out, e)
		case "filter":
			keep, err := op.filterFn(r)
			if err != nil {
				return nil, fmt.Errorf("filter: %w", err)
			}
			if keep {
				out = append(out, e)
			}
		case "flatMap":
			vs, err := op.flatMapFn(r)
			if err != nil {
				return nil, fmt.Errorf("flatMap: %w", err)
			}
			for _, v := range vs {
				x := e
				x.value = v
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// process runs one partition group through the chain and commits its cycle.
func (r *Runner) process(ctx context.Context, g *partGroup) error {
	envs := make([]envelope, 0, len(g.msgs))
	for i, m := range g.msgs {
		var v any
		if len(m.Data) > 0 {
			if err := json.Unmarshal(m.Data, &v); err != nil {
				return fmt.Errorf("decode message %s: %w", m.TransactionID, err)
			}
		}
		envs = append(envs, envelope{msg: m, msgIndex: i, key: g.id, value: v})
	}
	var err error
	for _, op := range r.st.pre {
		if envs, err = applyStage(op, envs, g.record); err != nil {
			return err
		}
	}
	if k := r.st.keyBy; k != nil {
		for i := range envs {
			if envs[i].key, err = k.keyFn(g.record(envs[i])); err != nil {
				return fmt.Errorf("keyBy: %w", err)
			}
		}
	}
	if r.st.gate != nil {
		return r.processGate(ctx, g, envs)
	}
	var ops []queen.StateOp
	var emits []emit
	if r.st.window != nil {
		if ops, emits, err = r.processWindow(ctx, g, envs); err != nil {
			return err
		}
	} else {
		for _, e := range envs {
			emits = append(emits, emit{key: e.key, value: e.value, msg: e.msg, origin: "m" + keySep + e.msg.ID})
		}
	}
	last := g.msgs[len(g.msgs)-1]
	ack := &queen.CycleAck{TransactionID: last.TransactionID, LeaseID: g.lease, Status: "completed", Count: len(g.msgs)}
	return r.commit(ctx, g.id, g.name, ops, emits, ack, true, int64(len(g.msgs)))
}

// processWindow loads the shard, annotates the batch with windows and folds it.
func (r *Runner) processWindow(ctx context.Context, g *partGroup, envs []envelope) ([]queen.StateOp, []emit, error) {
	w := r.st.window.win
	var loaded map[string]json.RawMessage
	if r.st.reducer != nil {
		rows, err := r.c.StreamState(ctx, queen.StateQuery{QueryID: r.queryID, PartitionID: g.id})
		if err != nil {
			return nil, nil, fmt.Errorf("state read: %w", err)
		}
		loaded = make(map[string]json.RawMessage, len(rows))
		for _, row := range rows {
			loaded[row.Key] = row.Value
		}
	}
	eventTime := w.eventTime != nil
	r.mu.Lock()
	wm, haveWM := r.wm[g.id]
	r.mu.Unlock()
	if eventTime {
		if raw, ok := loaded[watermarkKey]; ok {
			var v struct {
				EventTimeMs *int64 `json:"eventTimeMs"`
			}
			if json.Unmarshal(raw, &v) == nil && v.EventTimeMs != nil {
				wm, haveWM = *v.EventTimeMs, true
			}
		}
	}
	var annotated []envelope
	maxSeen, late := int64(minInt), int64(0)
	for _, e := range envs {
		ts, err := w.timeOf(e, g.record(e))
		if err != nil {
			return nil, nil, err
		}
		if eventTime {
			maxSeen = max(maxSeen, ts)
			if haveWM && ts < wm && w.onLate == "drop" {
				late++
				continue
			}
		}
		annotated = append(annotated, w.assign(e, ts)...)
	}
	if late > 0 {
		r.count(func(m *Metrics) { m.LateEvents += late })
	}
	if r.st.reducer == nil {
		emits := make([]emit, 0, len(annotated))
		for _, e := range annotated {
			info := &WindowInfo{Start: time.UnixMilli(e.start).UTC(), End: time.UnixMilli(e.end).UTC(), Key: isoMs(e.start)}
			emits = append(emits, emit{key: e.key, value: e.value, msg: e.msg, window: info,
				origin: "m" + keySep + e.msg.ID + keySep + isoMs(e.start)})
		}
		return nil, emits, nil
	}
	var clock int64
	if eventTime {
		if maxSeen != minInt && (!haveWM || maxSeen-w.allowedLateMs > wm) {
			wm, haveWM = maxSeen-w.allowedLateMs, true
		}
		if !haveWM {
			clock = minInt
		} else {
			clock = wm
			r.mu.Lock()
			r.wm[g.id] = wm
			r.mu.Unlock()
		}
	} else {
		for _, m := range g.msgs {
			clock = max(clock, m.CreatedAt.UnixMilli())
		}
	}
	rec := func(e envelope) Record {
		x := g.record(e)
		x.Window = &WindowInfo{Start: time.UnixMilli(e.start).UTC(), End: time.UnixMilli(e.end).UTC(), Key: isoMs(e.start)}
		return x
	}
	var f reducerFold
	var err error
	if w.kind == "session" {
		f, err = foldSessions(w, r.st.reducer, loaded, annotated, clock, g.record)
	} else {
		f, err = foldWindows(w, r.st.reducer, loaded, annotated, clock, rec)
	}
	if err != nil {
		return nil, nil, err
	}
	if eventTime && haveWM {
		f.ops = append(f.ops, queen.StateOp{Type: "upsert", Key: watermarkKey, Value: map[string]int64{"eventTimeMs": wm}})
	}
	return f.ops, f.emits, nil
}

const minInt = -1 << 62

// processGate evaluates the gate message by message. A message is allowed when every value
// the pre stages made of it is; the first denied message ends the batch, and what its values
// did to the state is undone.
func (r *Runner) processGate(ctx context.Context, g *partGroup, envs []envelope) error {
	rows, err := r.c.StreamState(ctx, queen.StateQuery{QueryID: r.queryID, PartitionID: g.id})
	if err != nil {
		return fmt.Errorf("state read: %w", err)
	}
	live := map[string]map[string]any{}
	for _, row := range rows {
		var v map[string]any
		if json.Unmarshal(row.Value, &v) == nil && v != nil {
			live[row.Key] = v
		}
	}
	base := GateContext{StreamTimeMs: time.Now().UnixMilli(), PartitionID: g.id, Partition: g.name}
	out, err := evalGate(r.st.gate.gateFn, envs, len(g.msgs), live, g.record, base)
	if err != nil {
		return err
	}
	allowedMsgs, allowed, ops := out.allowedMsgs, out.allowed, out.ops
	denied := int64(len(g.msgs) - allowedMsgs)
	if allowedMsgs == 0 {
		// Nothing to commit: the lease runs out and the batch comes back in order.
		r.count(func(m *Metrics) { m.GateDenials += denied })
		return nil
	}
	emits := make([]emit, 0, len(allowed))
	for _, e := range allowed {
		emits = append(emits, emit{key: e.key, value: e.value, msg: e.msg, origin: "m" + keySep + e.msg.ID})
	}
	last := g.msgs[allowedMsgs-1]
	ack := &queen.CycleAck{TransactionID: last.TransactionID, LeaseID: g.lease, Status: "completed", Count: allowedMsgs}
	if err := r.commit(ctx, g.id, g.name, ops, emits, ack, denied == 0, int64(allowedMsgs)); err != nil {
		return err
	}
	// Counted once committed: a rolled-back cycle's messages are decided again on redelivery.
	r.count(func(m *Metrics) { m.GateAllows += int64(allowedMsgs); m.GateDenials += denied })
	return nil
}

// gateOutcome is what a gate decided about a batch.
type gateOutcome struct {
	allowedMsgs int             // source messages settled: the prefix before the first denied one
	allowed     []envelope      // the values of those messages, for the sink
	ops         []queen.StateOp // upserts of the keys the allowed values touched
}

// evalGate runs the gate over the values of a batch in order. A message is allowed when
// every value the pre stages made of it is; the first denied value ends the batch and undoes
// what its message's values did to the state (each message starts from a snapshot). A
// message the pre stages dropped entirely is settled with the prefix.
func evalGate(fn func(Record, *GateContext) (bool, error), envs []envelope, nMsgs int,
	live map[string]map[string]any, rec func(envelope) Record, base GateContext) (gateOutcome, error) {
	touched := map[string]bool{}
	out := gateOutcome{allowedMsgs: nMsgs}
	var snap map[string]map[string]any
	var snapTouched map[string]bool
	var msgAllowed []envelope
	cur := -1
	for _, e := range envs {
		if e.msgIndex != cur {
			out.allowed = append(out.allowed, msgAllowed...)
			msgAllowed = nil
			cur = e.msgIndex
			snap, snapTouched = copyState(live), copyBools(touched)
		}
		st := live[e.key]
		if st == nil {
			st = map[string]any{}
			live[e.key] = st
		}
		gc := base
		gc.State, gc.Key = st, e.key
		ok, err := fn(rec(e), &gc)
		if err != nil {
			return gateOutcome{}, fmt.Errorf("gate: %w", err)
		}
		if !ok {
			live, touched, msgAllowed = snap, snapTouched, nil
			out.allowedMsgs = e.msgIndex
			break
		}
		touched[e.key] = true
		msgAllowed = append(msgAllowed, e)
	}
	out.allowed = append(out.allowed, msgAllowed...)
	keys := make([]string, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.ops = append(out.ops, queen.StateOp{Type: "upsert", Key: k, Value: live[k]})
	}
	return out, nil
}

func copyState(s map[string]map[string]any) map[string]map[string]any {
	out := make(map[string]map[string]any, len(s))
	for k, v := range s {
		c, _ := deepCopy(v).(map[string]any)
		if c == nil {
			c = map[string]any{}
		}
		out[k] = c
	}
	return out
}

func copyBools(s map[string]bool) map[string]bool {
	out := make(map[string]bool, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// commit runs the post stages and the sink over emits and sends the cycle.
func (r *Runner) commit(ctx context.Context, pid, pname string, ops []queen.StateOp, emits []emit,
	ack *queen.CycleAck, release bool, msgs int64) error {
	for _, op := range r.st.post {
		var next []emit
		for _, e := range emits {
			rec := Record{Value: e.value, Key: e.key, Message: e.msg, PartitionID: pid, Partition: pname, Window: e.window}
			env, err := applyStage(op, []envelope{{msg: e.msg, key: e.key, value: e.value}}, func(envelope) Record { return rec })
			if err != nil {
				return err
			}
			for _, x := range env {
				n := e
				n.value = x.value
				next = append(next, n)
			}
		}
		emits = next
	}
	var items []queen.StreamPushItem
	if s := r.st.sink; s != nil {
		seen := map[string]int{}
		for _, e := range emits {
			rec := Record{Value: e.value, Key: e.key, Message: e.msg, PartitionID: pid, Partition: pname, Window: e.window}
			if s.kind == "foreach" {
				if err := s.foreachFn(rec); err != nil {
					return fmt.Errorf("foreach: %w", err)
				}
				continue
			}
			part := pname
			switch {
			case s.sinkPartFn != nil:
				part = s.sinkPartFn(rec)
			case s.sinkPart != "":
				part = s.sinkPart
			}
			if part == "" {
				part = "Default"
			}
			payload := e.value
			if _, isObj := payload.(map[string]any); !isObj {
				payload = map[string]any{"value": payload}
			}
			n := seen[e.origin]
			seen[e.origin] = n + 1
			items = append(items, queen.StreamPushItem{Queue: s.sinkQueue.Name(), Partition: part, Payload: payload,
				TransactionID: r.sinkID(pid, e.origin, n)})
		}
	}
	res, err := r.c.CommitCycle(ctx, queen.Cycle{QueryID: r.queryID, PartitionID: pid, ConsumerGroup: r.group,
		StateOps: ops, PushItems: items, Ack: ack, ReleaseLease: release})
	if err != nil {
		return err
	}
	if !res.Success {
		r.count(func(m *Metrics) { m.RolledBack++ })
		return fmt.Errorf("cycle rolled back: %s", res.Error)
	}
	r.count(func(m *Metrics) {
		if ack == nil {
			m.FlushCycles++
		} else {
			m.Cycles++
		}
		m.Messages += msgs
		m.PushItems += int64(len(items))
		m.StateOps += int64(len(ops))
	})
	return nil
}

// sinkNS is the namespace of sink transactionIds.
var sinkNS = uuid.MustParse("6f1c1e0a-5b7e-4d0e-9a55-2f4a3c1b7d10")

// sinkID is a sink message's transactionId, derived from what it is (query, source partition,
// window state key or source message, n-th value of it). A repeated cycle, a replay after a
// lost answer, or a window emitted both by the idle flush and by the main loop (each read the
// shard before the other committed, docs/api/streams.md §7) writes the same id, which the
// broker reports as a duplicate instead of storing a second copy.
func (r *Runner) sinkID(pid, origin string, n int) string {
	return uuid.NewSHA1(sinkNS, []byte(r.queryID+keySep+pid+keySep+origin+keySep+strconv.Itoa(n))).String()
}

// flushLoop closes ripe windows of recently popped partitions every interval, so a window
// of a partition that went quiet is emitted without waiting for its next message.
func (r *Runner) flushLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		parts := map[string]string{}
		for id, p := range r.recent {
			if time.Since(p.seen) > recentFor {
				delete(r.recent, id)
				continue
			}
			parts[id] = p.name
		}
		r.mu.Unlock()
		for id, name := range parts {
			if err := r.flushPartition(ctx, id, name); err != nil && ctx.Err() == nil {
				r.fail(err, "flush")
			}
		}
	}
}

// flushPartition commits an ack-less cycle emitting and deleting the windows of one
// partition that are ripe at the wall clock (processing time) or the watermark (event time).
func (r *Runner) flushPartition(ctx context.Context, pid, pname string) error {
	w := r.st.window.win
	if r.st.reducer == nil {
		return nil
	}
	clock := time.Now().UnixMilli()
	if w.eventTime != nil {
		r.mu.Lock()
		wm, ok := r.wm[pid]
		r.mu.Unlock()
		if !ok {
			return nil
		}
		clock = wm
	}
	ripe := clock - w.graceMs
	q := queen.StateQuery{QueryID: r.queryID, PartitionID: pid, KeyPrefix: w.tag + keySep, RipeAtOrBefore: &ripe}
	if w.kind == "session" {
		// Every open session is read: those the official SDKs stored have no windowEnd for
		// the broker to filter on, and foldSessions decides ripeness from lastEventTime.
		q.KeyPrefix, q.RipeAtOrBefore = w.tag+keySep+"open"+keySep, nil
	}
	rows, err := r.c.StreamState(ctx, q)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	loaded := make(map[string]json.RawMessage, len(rows))
	for _, row := range rows {
		loaded[row.Key] = row.Value
	}
	var f reducerFold
	if w.kind == "session" {
		f, err = foldSessions(w, r.st.reducer, loaded, nil, clock, nil)
	} else {
		f, err = foldWindows(w, r.st.reducer, loaded, nil, clock, nil)
	}
	if err != nil || len(f.emits) == 0 {
		return err
	}
	return r.commit(ctx, pid, pname, f.ops, f.emits, nil, true, 0)
}
