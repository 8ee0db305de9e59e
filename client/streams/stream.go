package streams

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
)

// Stream is an immutable chain of operators over a source queue. Every combinator returns a
// new Stream with one more operator, so a prefix can be shared by several pipelines. A
// mistake in an operator's arguments is kept and reported by Compile and Run, which keeps the
// chain a single expression.
type Stream struct {
	source queen.Queue
	ops    []*operator
	err    error
}

// From starts a stream reading q (a queue; a queue narrowed to a partition is read whole).
func From(q queen.Queue) *Stream { return &Stream{source: q} }

// Record is what user functions see: one value flowing through the chain.
type Record struct {
	// Value is the current value: the decoded payload of the source message at first, what
	// the previous map/flatMap returned after it, the accumulator for emits of a window.
	Value any
	// Key is the grouping key of stateful operators: the source partition's id unless KeyBy
	// set another.
	Key string
	// Message is the source message (nil for emits of windows, which many messages made).
	Message *queen.Message
	// PartitionID and Partition name the source partition.
	PartitionID, Partition string
	// Window is set on emits of a window operator.
	Window *WindowInfo
}

// WindowInfo describes the window an emit closes.
type WindowInfo struct {
	// Start and End bound the window: [Start, End).
	Start, End time.Time
	// Key is Start in the ISO 8601 form the state keys use (2026-05-06T10:01:00.000Z).
	Key string
}

// operator is one link of the chain. Exactly the fields of its kind are set.
type operator struct {
	kind   string  // map, filter, flatMap, keyBy, window, reduce, aggregate, gate, sink, foreach
	config []field // structural config, hashed (confighash.go)

	mapFn     func(Record) (any, error)
	filterFn  func(Record) (bool, error)
	flatMapFn func(Record) ([]any, error)
	keyFn     func(Record) (string, error)
	win       *windowSpec
	reduceFn  func(acc any, r Record) (any, error)
	initial   any
	gateFn    func(Record, *GateContext) (bool, error)

	sinkQueue  queen.Queue
	sinkPart   string
	sinkPartFn func(Record) string
	foreachFn  func(Record) error
}

func (s *Stream) extend(op *operator, err error) *Stream {
	ops := make([]*operator, len(s.ops), len(s.ops)+1)
	copy(ops, s.ops)
	n := &Stream{source: s.source, ops: append(ops, op), err: s.err}
	if n.err == nil && err != nil {
		n.err = err
	}
	return n
}

// Map replaces each value by fn's result.
func (s *Stream) Map(fn func(Record) (any, error)) *Stream {
	return s.extend(&operator{kind: "map", mapFn: fn}, nilFn(fn == nil, "map"))
}

// Filter keeps the values for which fn returns true.
func (s *Stream) Filter(fn func(Record) (bool, error)) *Stream {
	return s.extend(&operator{kind: "filter", filterFn: fn}, nilFn(fn == nil, "filter"))
}

// FlatMap replaces each value by zero or more values.
func (s *Stream) FlatMap(fn func(Record) ([]any, error)) *Stream {
	return s.extend(&operator{kind: "flatMap", flatMapFn: fn}, nilFn(fn == nil, "flatMap"))
}

// KeyBy sets the key of the stateful operators after it (default: the source partition's id).
// A key that spans partitions is written by the workers of several partitions into separate
// state shards: windows are per (partition, key). Repartition first (a stream whose sink is
// partitioned by the key) when one window per key across partitions is meant.
func (s *Stream) KeyBy(fn func(Record) (string, error)) *Stream {
	return s.extend(&operator{kind: "keyBy", keyFn: fn}, nilFn(fn == nil, "keyBy"))
}

// Reduce folds the values of each window and key into an accumulator, starting from a deep
// copy of initial; closed windows emit their accumulator. It needs a window before it.
func (s *Stream) Reduce(fn func(acc any, r Record) (any, error), initial any) *Stream {
	op := &operator{kind: "reduce", reduceFn: fn, initial: initial,
		config: []field{{"hasInitial", true}}}
	return s.extend(op, nilFn(fn == nil, "reduce"))
}

// AggField is one named field of Aggregate.
type AggField struct {
	Name string
	Fn   func(Record) float64
}

// Field names an extractor of Aggregate. The names count, sum, min, max and avg have those
// meanings (count adds what Fn returns, usually 1); any other name is a running sum.
func Field(name string, fn func(Record) float64) AggField { return AggField{Name: name, Fn: fn} }

// Aggregate is Reduce with named numeric fields: the accumulator is an object with one
// number per field (avg also keeps __avg_sum and __avg_count). The field order is part of
// the config_hash, as in the JavaScript SDK's object literal.
func (s *Stream) Aggregate(fields ...AggField) *Stream {
	names := make([]string, len(fields))
	var err error
	for i, f := range fields {
		names[i] = f.Name
		if f.Fn == nil || f.Name == "" {
			err = fmt.Errorf("aggregate field %d needs a name and a function", i)
		}
	}
	if len(fields) == 0 {
		err = errors.New("aggregate requires at least one extractor")
	}
	fn, initial := aggregateReducer(fields)
	op := &operator{kind: "aggregate", reduceFn: fn, initial: initial, config: []field{{"fields", names}}}
	return s.extend(op, err)
}

// GateContext is the second argument of a gate function.
type GateContext struct {
	// State is the key's state, loaded from the broker. Changes persist when the message is
	// allowed and are discarded when it is denied.
	State map[string]any
	// StreamTimeMs is the wall clock of the cycle, in epoch milliseconds (refill arithmetic).
	StreamTimeMs int64
	// PartitionID and Partition name the source partition; Key is the record's key.
	PartitionID, Partition, Key string
}

// Gate decides per message whether it proceeds now (a rate limiter, a circuit breaker). The
// first denied message halts the batch: the allowed prefix is committed with its state and
// sink messages, the source lease is kept, and the denied message and its successors come
// back in order when the lease expires. A batch whose first message is denied commits
// nothing. At most one gate per stream, and none together with a window.
func (s *Stream) Gate(fn func(Record, *GateContext) (bool, error)) *Stream {
	return s.extend(&operator{kind: "gate", gateFn: fn}, nilFn(fn == nil, "gate"))
}

// SinkOption chooses the sink partition of a value.
type SinkOption func(*operator)

// ToPartition writes every value to the named partition.
func ToPartition(name string) SinkOption { return func(o *operator) { o.sinkPart = name } }

// ToPartitionFunc writes each value to the partition fn names.
func ToPartitionFunc(fn func(Record) string) SinkOption {
	return func(o *operator) { o.sinkPartFn = fn }
}

// To ends the chain with a sink queue: values are pushed there in the cycle that acks their
// source messages, atomically. By default a value goes to the partition of the source message
// (the same name in the sink queue). Objects are pushed as they are; other values as
// {"value": v}.
func (s *Stream) To(q queen.Queue, opts ...SinkOption) *Stream {
	op := &operator{kind: "sink", sinkQueue: q, config: []field{{"kind", "sink"}, {"queue", q.Name()}}}
	for _, o := range opts {
		o(op)
	}
	var err error
	if q.Name() == "" {
		err = errors.New("sink queue needs a name")
	}
	return s.extend(op, err)
}

// Foreach ends the chain with a side effect per value. The cycle acks the source after fn
// returned nil for every value, so a crash or an error redelivers (at least once); write to a
// sink queue for effects that must happen once.
func (s *Stream) Foreach(fn func(Record) error) *Stream {
	op := &operator{kind: "foreach", foreachFn: fn, config: []field{{"kind", "foreach"}}}
	return s.extend(op, nilFn(fn == nil, "foreach"))
}

func nilFn(isNil bool, what string) error {
	if isNil {
		return fmt.Errorf("%s needs a function", what)
	}
	return nil
}

// jsNumber renders a number as JavaScript's String(n) does in the range configs use, so that
// operator tags (and with them state keys) are the official SDKs' ("tumb:60", "tumb:0.5").
func jsNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// compiled is a chain split into the stages the runner executes.
type compiled struct {
	pre     []*operator // map/filter/flatMap on source records
	keyBy   *operator
	window  *operator
	reducer *operator
	gate    *operator
	post    []*operator // map/filter/flatMap on emits of the reducer or gate
	sink    *operator   // sink or foreach
	hash    string
}

// Compile checks the chain's shape, the same rules as the official SDKs: the sink last; one
// keyBy before any window, reducer or gate; one window; a reducer only after a window; a gate
// never with a window or reducer.
func (s *Stream) Compile() error {
	_, err := s.compile()
	return err
}

func (s *Stream) compile() (*compiled, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.source.Name() == "" {
		return nil, errors.New("stream source needs a queue name")
	}
	c := &compiled{hash: configHash(s.ops)}
	ops := s.ops
	for i, op := range ops {
		if (op.kind == "sink" || op.kind == "foreach") && i != len(ops)-1 {
			return nil, fmt.Errorf("sink operators (To / Foreach) must be the last in the chain; found %s at position %d of %d",
				op.kind, i, len(ops))
		}
	}
	if n := len(ops); n > 0 && (ops[n-1].kind == "sink" || ops[n-1].kind == "foreach") {
		c.sink = ops[n-1]
		ops = ops[:n-1]
	}
	phase := "pre"
	for _, op := range ops {
		switch op.kind {
		case "map", "filter", "flatMap":
			if phase == "reducer" || phase == "gate" {
				c.post = append(c.post, op)
			} else {
				c.pre = append(c.pre, op)
			}
		case "keyBy":
			if c.keyBy != nil {
				return nil, errors.New("only one KeyBy per stream")
			}
			if c.reducer != nil || c.gate != nil {
				return nil, errors.New("KeyBy must come before reduce/aggregate/gate")
			}
			c.keyBy = op
		case "window":
			if c.window != nil {
				return nil, errors.New("only one window operator per stream")
			}
			if c.reducer != nil {
				return nil, errors.New("window must come before reduce/aggregate")
			}
			if c.gate != nil {
				return nil, errors.New("window+reduce is incompatible with Gate in the same stream")
			}
			c.window = op
			phase = "window"
		case "reduce", "aggregate":
			if c.reducer != nil {
				return nil, errors.New("only one reduce/aggregate per stream")
			}
			if c.window == nil {
				return nil, errors.New("reduce/aggregate requires a preceding window operator")
			}
			c.reducer = op
			phase = "reducer"
		case "gate":
			if c.gate != nil {
				return nil, errors.New("only one Gate per stream")
			}
			if c.window != nil || c.reducer != nil {
				return nil, errors.New("Gate is incompatible with windowing/reduce in the same stream")
			}
			c.gate = op
			phase = "gate"
		}
	}
	if c.window != nil && c.window.win.kind == "session" && c.reducer == nil {
		return nil, errors.New("a session window requires Reduce or Aggregate")
	}
	return c, nil
}
