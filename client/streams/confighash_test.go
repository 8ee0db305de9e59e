package streams

import (
	"errors"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

// Test vectors of config_hash. Queen's own tests carry no literal hashes (its
// clients/client-js/test-v2/streams-unit/configHash.test.js and the Python and Go ports only
// compare hashes with each other), so these were computed with the official algorithm over
// the official operators' config literals, at queen-mq/queen commit
// 1a38f81a14f5bbf8405ae8c62ca7f9652e88dea7 (Python, Go ports) and b588eeb5108fa887980314ee574d5714b92065d8 (JavaScript):
//
//   - algorithm: clients/client-py/queen/streams/util/config_hash.py (config_hash_of:
//     sha256 of json.dumps([{"kind": op.kind, **op.config}, ...], separators=(",", ":"),
//     ensure_ascii=False)) and clients/client-go/streams/util/config_hash.go (the same, with
//     JavaScript's key order), i.e. JSON.stringify(ops.map(op => ({kind: op.kind, ...op.config})));
//   - configs: clients/client-js/client-v2/streams/operators/WindowSlidingOperator.js,
//     WindowSessionOperator.js, AggregateOperator.js, ReduceOperator.js, SinkOperator.js,
//     MapOperator.js, KeyByOperator.js, GateOperator.js (no config), and for the tumbling and
//     cron windows and foreach, whose JavaScript files the index lacks, their 1:1 ports
//     clients/client-py/queen/streams/operators/window_tumbling.py, window_cron.py,
//     foreach_op.py.
//
// Each vector was computed twice, by Node's JSON.stringify + crypto and by Python's
// json.dumps + hashlib as in config_hash.py; both agreed. The JSON text is kept beside each
// hash so a mismatch shows which key differs.
var hashVectors = []struct {
	name, json, hash string
	chain            func() *Stream
}{
	{"stateless", `[{"kind":"map"},{"kind":"filter"},{"kind":"sink","queue":"orders.filtered"}]`,
		"c6b7bf5b4e47918fb05e22b354915a62e008bc21bcdddf80ddf392985764fa71",
		func() *Stream { return src().Map(idMap).Filter(keepAll).To(q("orders.filtered")) }},
	{"tumbling", `[{"kind":"window-tumbling","seconds":60,"gracePeriod":0,"idleFlushMs":5000,"eventTime":false,"allowedLateness":0,"onLate":"drop"},{"kind":"aggregate","fields":["sum"]},{"kind":"sink","queue":"orders.totals"}]`,
		"5def717495a2aa054a590729dd2148b427108dc13cd605d1c5eec3b00a13a5ba",
		func() *Stream { return src().WindowTumbling(60).Aggregate(Field("sum", one)).To(q("orders.totals")) }},
	{"tumbling 2s, idle flush 1000, count+sum (docs/api/streams.md S54)", `[{"kind":"window-tumbling","seconds":2,"gracePeriod":0,"idleFlushMs":1000,"eventTime":false,"allowedLateness":0,"onLate":"drop"},{"kind":"aggregate","fields":["count","sum"]},{"kind":"sink","queue":"orders.totals"}]`,
		"de53f07f28df497f9ab968df917954c5937db87241df23ffb03a5fac7dc893a8",
		func() *Stream {
			return src().WindowTumbling(2, IdleFlush(1000)).Aggregate(Field("count", one), Field("sum", one)).To(q("orders.totals"))
		}},
	{"sliding event time", `[{"kind":"keyBy"},{"kind":"window-sliding","size":60,"slide":10,"gracePeriod":5,"idleFlushMs":5000,"eventTime":true,"allowedLateness":2.5,"onLate":"drop"},{"kind":"reduce","hasInitial":true},{"kind":"foreach"}]`,
		"3e182555233691129465a53067a72bcedcc64b16a0b299853184e06644731fbe",
		func() *Stream {
			return src().KeyBy(keyFn).WindowSliding(60, 10, GracePeriod(5), EventTime(evt), AllowedLateness(2.5)).
				Reduce(sum, 0).Foreach(func(Record) error { return nil })
		}},
	{"session", `[{"kind":"window-session","gap":30,"gracePeriod":0,"idleFlushMs":1000,"eventTime":false,"allowedLateness":0,"onLate":"drop"},{"kind":"aggregate","fields":["count","avg","min","max"]},{"kind":"sink","queue":"sessions"}]`,
		"63f69a5dc78bbf8bd4d83dd27715c806ef686841de8aa97d9d8e76ab7580acfd",
		func() *Stream {
			return src().WindowSession(30).Aggregate(Field("count", one), Field("avg", one), Field("min", one), Field("max", one)).To(q("sessions"))
		}},
	{"cron", `[{"kind":"window-cron","every":"hour","gracePeriod":0,"idleFlushMs":30000,"eventTime":false,"allowedLateness":0,"onLate":"include"},{"kind":"reduce","hasInitial":true},{"kind":"map"},{"kind":"sink","queue":"hourly"}]`,
		"20f7bd7bc21d2a9fdf08446c266ad65ba7dddb72fd68853a2bc36c073231ad62",
		func() *Stream {
			return src().WindowCron("hour", OnLate("include")).Reduce(sum, 0).Map(idMap).To(q("hourly"))
		}},
	{"gate", `[{"kind":"gate"},{"kind":"sink","queue":"out"}]`,
		"5fd7e4a41b14cfa1442b1ae0dbd020cc1110911bc923b4dd42f5f925ac5b0b1d",
		func() *Stream { return src().Gate(allowAll).To(q("out")) }},
	{"flatMap, no HTML escaping", `[{"kind":"flatMap"},{"kind":"keyBy"},{"kind":"map"},{"kind":"sink","queue":"a<b>&c"}]`,
		"8013ba67f781eea98dbc6616da087b1f53297a99421611a2d15fa2c6f0d02119",
		func() *Stream {
			return src().FlatMap(func(r Record) ([]any, error) { return []any{r.Value}, nil }).KeyBy(keyFn).Map(idMap).To(q("a<b>&c"))
		}},
}

var (
	client, _ = queen.New("http://127.0.0.1:1")
	src       = func() *Stream { return From(client.Queue("orders")) }
	q         = func(name string) queen.Queue { return client.Queue(name) }
	idMap     = func(r Record) (any, error) { return r.Value, nil }
	keepAll   = func(Record) (bool, error) { return true, nil }
	allowAll  = func(Record, *GateContext) (bool, error) { return true, nil }
	one       = func(Record) float64 { return 1 }
	keyFn     = func(r Record) (string, error) { return "k", nil }
	evt       = func(r Record) (time.Time, error) { return time.Now(), nil }
	sum       = func(acc any, r Record) (any, error) { f, _ := acc.(float64); return f + 1, nil }
)

func TestConfigHashVectors(t *testing.T) {
	for _, v := range hashVectors {
		s := v.chain()
		if err := s.Compile(); err != nil {
			t.Fatalf("%s: compile: %v", v.name, err)
		}
		var text []byte
		text = append(text, '[')
		for i, op := range s.ops {
			if i > 0 {
				text = append(text, ',')
			}
			text = append(text, describe(op)...)
		}
		text = append(text, ']')
		if string(text) != v.json {
			t.Errorf("%s: described as\n%s\nwant\n%s", v.name, text, v.json)
		}
		if got := s.ConfigHash(); got != v.hash {
			t.Errorf("%s: hash %s, want %s", v.name, got, v.hash)
		}
	}
}

// User functions are not hashed; sizes, field sets and sink names are.
func TestConfigHashIgnoresFunctions(t *testing.T) {
	a := src().WindowTumbling(60).Aggregate(Field("sum", one)).To(q("out")).ConfigHash()
	b := src().WindowTumbling(60).Aggregate(Field("sum", func(Record) float64 { return 2 })).To(q("out")).ConfigHash()
	if a != b {
		t.Fatal("different functions changed the hash")
	}
	for _, other := range []*Stream{
		src().WindowTumbling(30).Aggregate(Field("sum", one)).To(q("out")),
		src().WindowTumbling(60).Aggregate(Field("sum", one), Field("count", one)).To(q("out")),
		src().WindowTumbling(60).Aggregate(Field("sum", one)).To(q("out2")),
		src().WindowTumbling(60, GracePeriod(1)).Aggregate(Field("sum", one)).To(q("out")),
	} {
		if other.ConfigHash() == a {
			t.Fatalf("structural change kept the hash: %v", other.ops)
		}
	}
}

func TestCompileRules(t *testing.T) {
	cases := []struct {
		s    *Stream
		want string
	}{
		{src().Reduce(sum, 0), "reduce/aggregate requires a preceding window operator"},
		{src().WindowTumbling(10).WindowTumbling(30), "only one window operator per stream"},
		{src().To(q("y")).Map(idMap), "must be the last in the chain"},
		{src().WindowTumbling(10).Reduce(sum, 0).Gate(allowAll), "incompatible"},
		{src().Gate(allowAll).WindowTumbling(1), "incompatible"},
		{src().Gate(allowAll).Gate(allowAll), "only one Gate"},
		{src().WindowSession(5).To(q("x")), "session window requires"},
		{src().WindowSliding(60, 7), "integer multiple"},
		{src().WindowCron("fortnight"), "every must be one of"},
		{src().WindowTumbling(0), "seconds > 0"},
		{src().WindowTumbling(1, OnLate("later")), "onLate"},
		{src().Map(nil), "map needs a function"},
		{src().Aggregate(), "requires at least one extractor"},
	}
	for _, c := range cases {
		err := c.s.Compile()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("want error with %q, got %v", c.want, err)
		}
	}
	st, err := src().Map(idMap).KeyBy(keyFn).WindowTumbling(30).Reduce(sum, 0).Map(idMap).Filter(keepAll).To(q("out")).compile()
	if err != nil || len(st.pre) != 1 || len(st.post) != 2 || st.keyBy == nil || st.window == nil || st.reducer == nil || st.sink == nil {
		t.Fatalf("stages: %v %+v", err, st)
	}
	if _, err := src().Map(idMap).Run(t.Context(), RunOptions{}); err == nil {
		t.Fatal("Run without QueryID accepted")
	}
	if !errors.Is(&queen.StreamMismatchError{}, queen.ErrConfigHashMismatch) {
		t.Fatal("mismatch error does not match its sentinel")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Operator tags render numbers as JavaScript's String(n), so state keys are shared.
func TestOperatorTags(t *testing.T) {
	for s, want := range map[*Stream]string{
		src().WindowTumbling(60):      "tumb:60",
		src().WindowTumbling(0.5):     "tumb:0.5",
		src().WindowSliding(60, 10):   "slide:60:10",
		src().WindowSession(30):       "sess:30",
		src().WindowCron("minute"):    "cron:minute",
		src().WindowSliding(1.5, 0.5): "slide:1.5:0.5",
	} {
		if got := s.ops[0].win.tag; got != want {
			t.Errorf("tag %q, want %q", got, want)
		}
	}
}
