package streams

import (
	"reflect"
	"testing"

	queen "github.com/queen-go/queen/client"
)

// A budget gate: each value spends its amount from the key's budget; a value over budget is
// denied. Message 1 makes two values (as a FlatMap would), message 2 was filtered out.
func TestEvalGate(t *testing.T) {
	budget := func(r Record, g *GateContext) (bool, error) {
		left, ok := g.State["left"].(float64)
		if !ok {
			left = 10
		}
		g.State["left"] = left - r.Value.(float64) // changed even when denied: must be undone
		return left >= r.Value.(float64), nil
	}
	msgs := []*queen.Message{{ID: "m0"}, {ID: "m1"}, {ID: "m2"}, {ID: "m3"}, {ID: "m4"}}
	env := func(i int, key string, v float64) envelope {
		return envelope{msg: msgs[i], msgIndex: i, key: key, value: v}
	}
	rec := func(e envelope) Record { return Record{Value: e.value, Key: e.key} }

	// m0 spends 4 of a; m1 spends 3 of a and 3 of b; m2 is gone; m3 wants 5 of a (3 left):
	// denied, and m4 is not looked at. Settled: m0..m2; state as after m1.
	envs := []envelope{env(0, "a", 4), env(1, "a", 3), env(1, "b", 3), env(3, "a", 5), env(4, "a", 1)}
	out, err := evalGate(budget, envs, len(msgs), map[string]map[string]any{}, rec, GateContext{})
	if err != nil {
		t.Fatal(err)
	}
	if out.allowedMsgs != 3 || len(out.allowed) != 3 {
		t.Fatalf("allowed %d messages, %d values", out.allowedMsgs, len(out.allowed))
	}
	want := []queen.StateOp{{Type: "upsert", Key: "a", Value: map[string]any{"left": 3.0}},
		{Type: "upsert", Key: "b", Value: map[string]any{"left": 7.0}}}
	if !reflect.DeepEqual(out.ops, want) {
		t.Fatalf("ops %+v, want %+v", out.ops, want)
	}

	// A message half allowed is wholly denied: m1's second value fails, so m1's first value
	// is undone too and only m0 is settled.
	loaded := map[string]map[string]any{"b": {"left": 1.0}}
	out, _ = evalGate(budget, envs[:3], len(msgs), loaded, rec, GateContext{})
	if out.allowedMsgs != 1 || len(out.allowed) != 1 ||
		!reflect.DeepEqual(out.ops, []queen.StateOp{{Type: "upsert", Key: "a", Value: map[string]any{"left": 6.0}}}) {
		t.Fatalf("half-allowed message: %+v", out)
	}

	// The first message denied: nothing settled, nothing written.
	out, _ = evalGate(budget, []envelope{env(0, "a", 11)}, len(msgs), map[string]map[string]any{}, rec, GateContext{})
	if out.allowedMsgs != 0 || len(out.ops) != 0 || len(out.allowed) != 0 {
		t.Fatalf("first denied: %+v", out)
	}

	// Nothing denied: every message settled, filtered ones included.
	out, _ = evalGate(budget, envs[:1], len(msgs), map[string]map[string]any{}, rec, GateContext{})
	if out.allowedMsgs != len(msgs) || len(out.allowed) != 1 {
		t.Fatalf("all allowed: %+v", out)
	}
}
