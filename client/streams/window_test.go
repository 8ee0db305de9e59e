package streams

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func spec(s *Stream) *windowSpec { return s.ops[0].win }

func TestWindowAssignment(t *testing.T) {
	ts := ms("2026-05-06T10:01:42.123Z")
	tumb := spec(src().WindowTumbling(60)).assign(envelope{}, ts)
	if len(tumb) != 1 || isoMs(tumb[0].start) != "2026-05-06T10:01:00.000Z" || tumb[0].end-tumb[0].start != 60_000 {
		t.Fatalf("tumbling: %+v", tumb)
	}
	sl := spec(src().WindowSliding(60, 20)).assign(envelope{}, ts)
	var starts []string
	for _, e := range sl {
		starts = append(starts, isoMs(e.start))
	}
	if !reflect.DeepEqual(starts, []string{"2026-05-06T10:01:40.000Z", "2026-05-06T10:01:20.000Z", "2026-05-06T10:01:00.000Z"}) {
		t.Fatalf("sliding: %v", starts)
	}
	for every, want := range map[string]string{"second": "2026-05-06T10:01:42.000Z", "minute": "2026-05-06T10:01:00.000Z",
		"hour": "2026-05-06T10:00:00.000Z", "day": "2026-05-06T00:00:00.000Z", "week": "2026-05-04T00:00:00.000Z"} {
		got := spec(src().WindowCron(every)).assign(envelope{}, ts)
		if isoMs(got[0].start) != want {
			t.Errorf("cron %s: %s, want %s", every, isoMs(got[0].start), want)
		}
	}
	// 2026-05-04 is a Monday; times before the epoch floor downwards.
	if got := spec(src().WindowTumbling(1)).assign(envelope{}, -1); got[0].start != -1000 {
		t.Fatalf("negative time: %+v", got)
	}
}

func stateOf(t *testing.T, rows map[string]any) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range rows {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = b
	}
	return out
}

func plainRec(e envelope) Record { return Record{Value: e.value, Key: e.key} }

// A batch folds into its windows; windows whose end + grace is at or before the clock close
// (emit, and delete when stored); open ones are upserted; rows of other tags stay untouched.
func TestFoldWindows(t *testing.T) {
	s := src().WindowTumbling(60, GracePeriod(5)).Aggregate(Field("count", one), Field("sum", func(r Record) float64 { return r.Value.(float64) }))
	w, red := s.ops[0].win, s.ops[1]
	w0 := ms("2026-05-06T10:00:00Z")
	stored := "tumb:60" + keySep + "2026-05-06T10:00:00.000Z" + keySep + "k"
	loaded := stateOf(t, map[string]any{
		stored:   map[string]any{"acc": map[string]any{"count": 2, "sum": 10}, "windowStart": w0, "windowEnd": w0 + 60_000},
		"__wm__": map[string]any{"eventTimeMs": 1},
		"tumb:30" + keySep + "2026-05-06T10:00:00.000Z" + keySep + "k": map[string]any{"acc": 1, "windowStart": 0, "windowEnd": 1},
	})
	var envs []envelope
	for _, x := range []struct {
		at  string
		key string
		v   float64
	}{{"2026-05-06T10:00:30Z", "k", 5}, {"2026-05-06T10:01:10Z", "k", 7}, {"2026-05-06T10:01:20Z", "j", 1}} {
		envs = append(envs, w.assign(envelope{key: x.key, value: x.v}, ms(x.at))...)
	}
	// Clock 10:01:05: the 10:00 window (end 10:01:00 + 5 s grace) closes, 10:01 stays open.
	f, err := foldWindows(w, red, loaded, envs, ms("2026-05-06T10:01:05Z"), plainRec)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.emits) != 1 || f.emits[0].key != "k" || f.emits[0].window.Key != "2026-05-06T10:00:00.000Z" ||
		!reflect.DeepEqual(f.emits[0].value, map[string]any{"count": 3.0, "sum": 15.0}) {
		t.Fatalf("emits: %+v", f.emits)
	}
	var kinds []string
	for _, op := range f.ops {
		kinds = append(kinds, op.Type+" "+op.Key)
	}
	want := []string{"delete " + stored,
		"upsert tumb:60" + keySep + "2026-05-06T10:01:00.000Z" + keySep + "j",
		"upsert tumb:60" + keySep + "2026-05-06T10:01:00.000Z" + keySep + "k"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("ops:\n%q\nwant\n%q", kinds, want)
	}
	v := f.ops[2].Value.(windowValue)
	if v.WindowStart != w0+60_000 || v.WindowEnd != w0+120_000 || !reflect.DeepEqual(v.Acc, map[string]any{"count": 1.0, "sum": 7.0}) {
		t.Fatalf("open window value: %+v", v)
	}
	// A window opened and closed in the same batch emits without a delete.
	f, _ = foldWindows(w, red, nil, envs[:1], ms("2026-05-06T11:00:00Z"), plainRec)
	if len(f.emits) != 1 || len(f.ops) != 0 {
		t.Fatalf("opened and closed: %+v", f)
	}
	// The emit's identity (its sink transactionId) is the same for the same window and
	// content, and differs for another content of the same window (a late update).
	again, _ := foldWindows(w, red, nil, envs[:1], ms("2026-05-06T12:00:00Z"), plainRec)
	more := append(envs[:1:1], w.assign(envelope{key: "k", value: 9.0}, ms("2026-05-06T10:00:40Z"))...)
	late, _ := foldWindows(w, red, nil, more, ms("2026-05-06T12:00:00Z"), plainRec)
	if again.emits[0].origin != f.emits[0].origin || late.emits[0].origin == f.emits[0].origin {
		t.Fatalf("origins %q %q %q", f.emits[0].origin, again.emits[0].origin, late.emits[0].origin)
	}
}

func TestAggregateFields(t *testing.T) {
	fn, initial := aggregateReducer([]AggField{Field("count", one), Field("min", val), Field("max", val), Field("avg", val), Field("total", val)})
	acc := deepCopy(initial)
	for _, v := range []float64{4, -2, 7} {
		acc, _ = fn(acc, Record{Value: v})
	}
	want := map[string]any{"count": 3.0, "min": -2.0, "max": 7.0, "avg": 3.0, "__avg_sum": 9.0, "__avg_count": 3.0, "total": 9.0}
	if !reflect.DeepEqual(acc, want) {
		t.Fatalf("aggregate %v, want %v", acc, want)
	}
	if !reflect.DeepEqual(initial["min"], nil) || initial["count"] != 0.0 {
		t.Fatalf("initial changed: %v", initial)
	}
}

func val(r Record) float64 { return r.Value.(float64) }

// Sessions extend while records come within gap, close and restart past it, and close at the
// clock once last + gap + grace has passed. A stored session that closed is deleted.
func TestFoldSessions(t *testing.T) {
	s := src().WindowSession(10).Aggregate(Field("count", one))
	w, red := s.ops[0].win, s.ops[1]
	base := ms("2026-05-06T10:00:00Z")
	open := "sess:10" + keySep + "open" + keySep
	loaded := stateOf(t, map[string]any{
		open + "a": sessionValue{Acc: map[string]any{"count": 2}, SessionStart: base, LastEventTime: base + 5_000, WindowEnd: base + 15_000},
		open + "z": sessionValue{Acc: map[string]any{"count": 1}, SessionStart: base, LastEventTime: base, WindowEnd: base + 10_000},
	})
	at := func(key string, sec int64) envelope { return envelope{key: key, ts: base + sec*1000} }
	envs := []envelope{at("a", 12), at("a", 30), at("b", 31), at("b", 35)}
	f, err := foldSessions(w, red, loaded, envs, base+36_000, plainRec)
	if err != nil {
		t.Fatal(err)
	}
	// a: stored session (0..12 s, 3 records) closes when the 30 s record comes; z: closes at
	// the clock (0 + 10 ≤ 36). a's new session and b stay open.
	if len(f.emits) != 2 || f.emits[0].key != "a" || f.emits[0].window.End.UnixMilli() != base+22_000 ||
		!reflect.DeepEqual(f.emits[0].value, map[string]any{"count": 3.0}) || f.emits[1].key != "z" {
		t.Fatalf("emits: %+v", f.emits)
	}
	var got []string
	for _, op := range f.ops {
		got = append(got, op.Type+" "+op.Key)
	}
	want := []string{"upsert " + open + "a", "upsert " + open + "b", "delete " + open + "z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ops %q, want %q", got, want)
	}
	if v := f.ops[1].Value.(sessionValue); v.SessionStart != base+31_000 || v.LastEventTime != base+35_000 || v.WindowEnd != base+45_000 {
		t.Fatalf("b: %+v", v)
	}
	// The flush (no records) closes what is ripe and deletes it.
	f, _ = foldSessions(w, red, loaded, nil, base+100_000, nil)
	if len(f.emits) != 2 || len(f.ops) != 2 || f.ops[0].Type != "delete" {
		t.Fatalf("flush: %+v", f)
	}
}

func TestGroupByPartitionSortsByPosition(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 10, 0, 0, 0, time.UTC)
	b := &queen.Batch{LeaseID: "L", Messages: []*queen.Message{
		{ID: "b", PartitionID: "p1", CreatedAt: t0.Add(1500 * time.Microsecond)},
		{ID: "x", PartitionID: "p2", CreatedAt: t0},
		{ID: "a", PartitionID: "p1", CreatedAt: t0.Add(1200 * time.Microsecond)},
		{ID: "c", PartitionID: "p1", CreatedAt: t0},
	}}
	gs := groupByPartition(b)
	if len(gs) != 2 || gs[0].id != "p1" || gs[0].lease != "L" {
		t.Fatalf("groups: %+v", gs)
	}
	var ids []string
	for _, m := range gs[0].msgs {
		ids = append(ids, m.ID)
	}
	// Same millisecond: by id (docs/api/streams.md §7).
	if !reflect.DeepEqual(ids, []string{"c", "a", "b"}) {
		t.Fatalf("order %v", ids)
	}
}
