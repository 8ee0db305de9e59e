package streams

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	queen "github.com/queen-go/queen/client"
)

// State keys are `<operatorTag>\u001f<windowKey>\u001f<userKey>` (docs/api/streams.md §1); open
// sessions use `<tag>\u001fopen\u001f<userKey>`; the event-time watermark is `__wm__`.
const (
	keySep       = "\u001f"
	watermarkKey = "__wm__"
	// weekOffsetMs aligns week windows on Monday 00:00 UTC (1970-01-01 was a Thursday).
	weekOffsetMs = 4 * 86_400_000
)

// windowSpec is a window operator's behaviour; its config (hashed) is on the operator.
type windowSpec struct {
	kind          string // tumbling, sliding, session, cron
	sizeMs        int64  // tumbling, cron: window length; sliding: size
	slideMs       int64  // sliding
	gapMs         int64  // session
	every         string // cron
	tag           string // operator tag, the first part of state keys
	graceMs       int64
	idleFlushMs   int64
	allowedLateMs int64
	onLate        string // drop or include
	eventTime     func(Record) (time.Time, error)
}

// WindowOption tunes a window operator.
type WindowOption func(*windowOpts)

type windowOpts struct {
	grace, lateness float64
	idleFlushMs     *int64
	eventTime       func(Record) (time.Time, error)
	onLate          string
}

// GracePeriod keeps a window open this many seconds after its end for late arrivals.
func GracePeriod(seconds float64) WindowOption { return func(o *windowOpts) { o.grace = seconds } }

// IdleFlush closes ripe windows of quiet partitions every ms milliseconds (0 disables it).
// Defaults: 5000 for tumbling and sliding, 1000 for session, 30000 for cron windows.
func IdleFlush(ms int64) WindowOption { return func(o *windowOpts) { o.idleFlushMs = &ms } }

// EventTime switches the window to event time: fn gives each record's time, windows close on
// a per-partition watermark (the largest event time seen minus AllowedLateness) kept in the
// broker's state, and records older than the watermark are late.
func EventTime(fn func(Record) (time.Time, error)) WindowOption {
	return func(o *windowOpts) { o.eventTime = fn }
}

// AllowedLateness holds the event-time watermark this many seconds behind the largest event
// time seen.
func AllowedLateness(seconds float64) WindowOption {
	return func(o *windowOpts) { o.lateness = seconds }
}

// OnLate says what happens to late event-time records: "drop" (default) or "include".
func OnLate(policy string) WindowOption { return func(o *windowOpts) { o.onLate = policy } }

// window builds the operator of a window kind; its config keys follow the official SDKs'
// declaration order (kind, the kind's own sizes, gracePeriod, idleFlushMs, eventTime,
// allowedLateness, onLate).
func (s *Stream) window(spec *windowSpec, sizes []field, defaultIdle int64, opts []WindowOption) *Stream {
	o := windowOpts{}
	for _, f := range opts {
		f(&o)
	}
	var err error
	switch o.onLate {
	case "":
		o.onLate = "drop"
	case "drop", "include":
	default:
		err = fmt.Errorf("onLate must be 'drop' or 'include' (got %q)", o.onLate)
	}
	idle := defaultIdle
	if o.idleFlushMs != nil {
		idle = max(0, *o.idleFlushMs)
	}
	spec.graceMs = max(0, int64(math.Floor(o.grace*1000)))
	spec.allowedLateMs = max(0, int64(math.Floor(o.lateness*1000)))
	spec.idleFlushMs = idle
	spec.onLate = o.onLate
	spec.eventTime = o.eventTime
	cfg := append([]field{{"kind", "window-" + spec.kind}}, sizes...)
	cfg = append(cfg, field{"gracePeriod", o.grace}, field{"idleFlushMs", idle},
		field{"eventTime", o.eventTime != nil}, field{"allowedLateness", o.lateness}, field{"onLate", o.onLate})
	return s.extend(&operator{kind: "window", win: spec, config: cfg}, err)
}

// WindowTumbling groups records into fixed, non-overlapping windows of the given seconds.
func (s *Stream) WindowTumbling(seconds float64, opts ...WindowOption) *Stream {
	if !(seconds > 0) {
		return s.extend(&operator{kind: "window"}, errors.New("WindowTumbling requires seconds > 0"))
	}
	spec := &windowSpec{kind: "tumbling", sizeMs: int64(seconds * 1000), tag: "tumb:" + jsNumber(seconds)}
	return s.window(spec, []field{{"seconds", seconds}}, 5000, opts)
}

// WindowSliding groups records into windows of size seconds starting every slide seconds;
// each record belongs to size/slide windows (one state row each per key).
func (s *Stream) WindowSliding(size, slide float64, opts ...WindowOption) *Stream {
	if !(size > 0) || !(slide > 0) {
		return s.extend(&operator{kind: "window"}, errors.New("WindowSliding requires size > 0 and slide > 0"))
	}
	if math.Mod(size, slide) != 0 {
		return s.extend(&operator{kind: "window"},
			fmt.Errorf("WindowSliding: size (%v) must be an integer multiple of slide (%v)", size, slide))
	}
	spec := &windowSpec{kind: "sliding", sizeMs: int64(size * 1000), slideMs: int64(slide * 1000),
		tag: "slide:" + jsNumber(size) + ":" + jsNumber(slide)}
	return s.window(spec, []field{{"size", size}, {"slide", slide}}, 5000, opts)
}

// WindowSession groups the records of a key into sessions that last while records keep
// arriving within gap seconds of each other. It needs Reduce or Aggregate after it.
func (s *Stream) WindowSession(gap float64, opts ...WindowOption) *Stream {
	if !(gap > 0) {
		return s.extend(&operator{kind: "window"}, errors.New("WindowSession requires gap > 0"))
	}
	spec := &windowSpec{kind: "session", gapMs: int64(gap * 1000), tag: "sess:" + jsNumber(gap)}
	return s.window(spec, []field{{"gap", gap}}, 1000, opts)
}

// WindowCron groups records into calendar-aligned UTC windows: every is "second", "minute",
// "hour", "day" or "week" (weeks start on Monday).
func (s *Stream) WindowCron(every string, opts ...WindowOption) *Stream {
	ms := map[string]int64{"second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000,
		"week": 7 * 86_400_000}[every]
	if ms == 0 {
		return s.extend(&operator{kind: "window"},
			fmt.Errorf("WindowCron: every must be one of second|minute|hour|day|week (got %q)", every))
	}
	spec := &windowSpec{kind: "cron", sizeMs: ms, every: every, tag: "cron:" + every}
	return s.window(spec, []field{{"every", every}}, 30_000, opts)
}

// isoMs is the JavaScript toISOString form of an epoch-ms time, the window key of state keys.
func isoMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// floorDiv is floor(a/b) for b > 0 (Go's / truncates toward zero).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// envelope is one value on its way through a cycle.
type envelope struct {
	msg      *queen.Message
	msgIndex int // position of the source message in the sorted batch
	key      string
	value    any
	ts       int64 // event or processing time, ms
	start    int64 // window bounds, ms
	end      int64
}

// timeOf is a record's time under the window's mode; ok is false when it has none.
func (w *windowSpec) timeOf(e envelope, rec Record) (int64, error) {
	if w.eventTime != nil {
		t, err := w.eventTime(rec)
		if err != nil {
			return 0, fmt.Errorf("eventTime: %w", err)
		}
		return t.UnixMilli(), nil
	}
	if e.msg == nil {
		return 0, errors.New("window could not determine the record's time")
	}
	return e.msg.CreatedAt.UnixMilli(), nil
}

// assign returns the windows a record at ts belongs to (for session windows, one envelope
// carrying only the time: sessions are decided against the stored state).
func (w *windowSpec) assign(e envelope, ts int64) []envelope {
	e.ts = ts
	switch w.kind {
	case "tumbling":
		e.start = floorDiv(ts, w.sizeMs) * w.sizeMs
		e.end = e.start + w.sizeMs
		return []envelope{e}
	case "cron":
		if w.every == "week" {
			e.start = floorDiv(ts-weekOffsetMs, w.sizeMs)*w.sizeMs + weekOffsetMs
		} else {
			e.start = floorDiv(ts, w.sizeMs) * w.sizeMs
		}
		e.end = e.start + w.sizeMs
		return []envelope{e}
	case "sliding":
		latest := floorDiv(ts, w.slideMs) * w.slideMs
		out := make([]envelope, 0, w.sizeMs/w.slideMs)
		for i := int64(0); i < w.sizeMs/w.slideMs; i++ {
			ws := latest - i*w.slideMs
			if ts < ws || ts >= ws+w.sizeMs {
				continue
			}
			x := e
			x.start, x.end = ws, ws+w.sizeMs
			out = append(out, x)
		}
		return out
	}
	return []envelope{e}
}

// emit is a value leaving a window (or a stateless stage) for the post stages and the sink.
type emit struct {
	key    string
	value  any
	window *WindowInfo
	msg    *queen.Message // the source message of non-window emits
	// origin identifies the emit for its sink transactionId: the state key of a window with a
	// digest of its accumulator (the same window emitted twice with the same content is one
	// message; a late update of an emitted window, OnLate("include"), is another), the source
	// message id otherwise.
	origin string
}

// digest is a short fingerprint of a JSON value (encoding/json sorts map keys).
func digest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// reducerFold is what a cycle's windows produce: state changes and closed windows.
type reducerFold struct {
	ops   []queen.StateOp
	emits []emit
}

// winAcc is one window's accumulator during a fold.
type winAcc struct {
	userKey, windowKey string
	start, end         int64
	acc                any
	seeded, touched    bool
}

// windowValue is the stored value of an open window, the official SDKs' shape.
type windowValue struct {
	Acc         any   `json:"acc"`
	WindowStart int64 `json:"windowStart"`
	WindowEnd   int64 `json:"windowEnd"`
}

// foldWindows applies a batch of window-annotated envelopes to the loaded open windows of
// the operator tag and closes every window whose end + grace ≤ clock. Rows of other tags and
// internal keys (`__…`) are left alone.
func foldWindows(w *windowSpec, red *operator, loaded map[string]json.RawMessage, envs []envelope,
	clock int64, rec func(envelope) Record) (reducerFold, error) {
	accs := map[string]*winAcc{}
	for k, raw := range loaded {
		parts := strings.Split(k, keySep)
		if len(parts) != 3 || parts[0] != w.tag {
			continue
		}
		var v map[string]json.RawMessage
		a := &winAcc{userKey: parts[2], windowKey: parts[1], seeded: true}
		if json.Unmarshal(raw, &v) == nil && v["acc"] != nil {
			_ = json.Unmarshal(v["windowStart"], &a.start)
			_ = json.Unmarshal(v["windowEnd"], &a.end)
			_ = json.Unmarshal(v["acc"], &a.acc)
		} else {
			_ = json.Unmarshal(raw, &a.acc)
			if t, err := time.Parse(time.RFC3339Nano, parts[1]); err == nil {
				a.start, a.end = t.UnixMilli(), t.UnixMilli()
			}
		}
		accs[k] = a
	}
	for _, e := range envs {
		wk := isoMs(e.start)
		sk := w.tag + keySep + wk + keySep + e.key
		a := accs[sk]
		if a == nil {
			a = &winAcc{userKey: e.key, windowKey: wk, start: e.start, end: e.end, acc: deepCopy(red.initial)}
			accs[sk] = a
		}
		r := rec(e)
		nv, err := red.reduceFn(a.acc, r)
		if err != nil {
			return reducerFold{}, fmt.Errorf("%s: %w", red.kind, err)
		}
		a.acc, a.touched = nv, true
	}
	keys := make([]string, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	// Windows close oldest first, so sink messages of one key come out in time order.
	sort.Slice(keys, func(i, j int) bool {
		a, b := accs[keys[i]], accs[keys[j]]
		if a.end != b.end {
			return a.end < b.end
		}
		return keys[i] < keys[j]
	})
	var f reducerFold
	for _, k := range keys {
		a := accs[k]
		if a.end+w.graceMs <= clock {
			f.emits = append(f.emits, emit{key: a.userKey, value: a.acc, origin: k + keySep + digest(a.acc),
				window: &WindowInfo{Start: time.UnixMilli(a.start).UTC(), End: time.UnixMilli(a.end).UTC(), Key: a.windowKey}})
			if a.seeded {
				f.ops = append(f.ops, queen.StateOp{Type: "delete", Key: k})
			}
		} else if a.touched {
			f.ops = append(f.ops, queen.StateOp{Type: "upsert", Key: k,
				Value: windowValue{Acc: a.acc, WindowStart: a.start, WindowEnd: a.end}})
		}
	}
	return f, nil
}

// sessionValue is the stored value of an open session: the official SDKs' fields, plus
// windowEnd (lastEventTime + gap) so that the idle flush can find ripe sessions with the
// state read's ripe_at_or_before filter. The official SDKs ignore the extra field.
type sessionValue struct {
	Acc           any   `json:"acc"`
	SessionStart  int64 `json:"sessionStart"`
	LastEventTime int64 `json:"lastEventTime"`
	WindowEnd     int64 `json:"windowEnd"`
}

// foldSessions applies a batch to the open sessions of its keys: a record within gap of its
// key's last one extends the session, a later one closes it (emit) and opens another; then
// every session whose last record + gap + grace ≤ clock closes. A stored session that closed
// is deleted; an open one that changed is upserted.
func foldSessions(w *windowSpec, red *operator, loaded map[string]json.RawMessage, envs []envelope,
	clock int64, rec func(envelope) Record) (reducerFold, error) {
	type session struct {
		acc         any
		start, last int64
		stored      bool // a row exists in the broker
		dirty       bool
	}
	prefix := w.tag + keySep + "open" + keySep
	sessions := map[string]*session{}
	for k, raw := range loaded {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		var v sessionValue
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		sessions[strings.TrimPrefix(k, prefix)] = &session{acc: v.Acc, start: v.SessionStart, last: v.LastEventTime, stored: true}
	}
	var f reducerFold
	closeSession := func(key string, s *session) {
		f.emits = append(f.emits, emit{key: key, value: s.acc, origin: prefix + key + keySep + isoMs(s.start) + keySep + digest(s.acc),
			window: &WindowInfo{Start: time.UnixMilli(s.start).UTC(), End: time.UnixMilli(s.last + w.gapMs).UTC(), Key: isoMs(s.start)}})
	}
	for _, e := range envs {
		s := sessions[e.key]
		switch {
		case s == nil:
			s = &session{acc: deepCopy(red.initial), start: e.ts, last: e.ts}
			sessions[e.key] = s
		case s.last+w.gapMs >= e.ts:
			s.last = max(s.last, e.ts)
		default:
			closeSession(e.key, s)
			s = &session{acc: deepCopy(red.initial), start: e.ts, last: e.ts, stored: s.stored}
			sessions[e.key] = s
		}
		nv, err := red.reduceFn(s.acc, rec(e))
		if err != nil {
			return reducerFold{}, fmt.Errorf("%s: %w", red.kind, err)
		}
		s.acc, s.dirty = nv, true
	}
	keys := make([]string, 0, len(sessions))
	for k := range sessions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := sessions[k]
		if s.last+w.gapMs+w.graceMs <= clock {
			closeSession(k, s)
			if s.stored {
				f.ops = append(f.ops, queen.StateOp{Type: "delete", Key: prefix + k})
			}
		} else if s.dirty {
			f.ops = append(f.ops, queen.StateOp{Type: "upsert", Key: prefix + k,
				Value: sessionValue{Acc: s.acc, SessionStart: s.start, LastEventTime: s.last, WindowEnd: s.last + w.gapMs}})
		}
	}
	return f, nil
}

// aggregateReducer is the reducer of Aggregate, the JavaScript SDK's semantics: count adds
// the extractor's value; sum and unknown names add it; min and max keep the extreme; avg keeps
// __avg_sum and __avg_count beside avg.
func aggregateReducer(fields []AggField) (func(any, Record) (any, error), map[string]any) {
	initial := map[string]any{}
	for _, f := range fields {
		switch f.Name {
		case "min", "max":
			initial[f.Name] = nil
		case "avg":
			initial["__avg_sum"], initial["__avg_count"], initial["avg"] = 0.0, 0.0, 0.0
		default:
			initial[f.Name] = 0.0
		}
	}
	fn := func(acc any, r Record) (any, error) {
		next := map[string]any{}
		if m, ok := acc.(map[string]any); ok {
			for k, v := range m {
				next[k] = v
			}
		}
		for _, f := range fields {
			v := f.Fn(r)
			switch f.Name {
			case "min":
				if cur, ok := next["min"].(float64); !ok || v < cur {
					next["min"] = v
				}
			case "max":
				if cur, ok := next["max"].(float64); !ok || v > cur {
					next["max"] = v
				}
			case "avg":
				s, _ := next["__avg_sum"].(float64)
				c, _ := next["__avg_count"].(float64)
				next["__avg_sum"], next["__avg_count"], next["avg"] = s+v, c+1, (s+v)/(c+1)
			default:
				cur, _ := next[f.Name].(float64)
				next[f.Name] = cur + v
			}
		}
		return next, nil
	}
	return fn, initial
}

// deepCopy gives each window its own copy of a reducer's initial value, as JSON would give it
// back from the broker (numbers become float64), so a fold sees one representation.
func deepCopy(v any) any {
	switch v.(type) {
	case nil, bool, string, float64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
