package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// S54 and S55 (docs/api/streams.md §10) name Queen's own JavaScript and Go streaming SDKs. Neither
// can be installed here (the npm registry has no queen-mq, the Go proxy refuses
// github.com/smartpricing/queen/clients/client-go, and the machine's Node is 20 where the SDK
// needs 22), so these tests run the exact request sequence those SDKs send (§7, §8; read from
// the runners of Queen v0.15) against a real broker: the same routes, fields, sorting, acks
// and lease handling, with the window and gate arithmetic done here as the SDKs do it.

// sdkMessage is a popped message as the runners read it.
type sdkMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	CreatedAt     string          `json:"createdAt"`
	Data          json.RawMessage `json:"data"`
}

// sdkPop is the runners' pop: batch 200, 4 partitions, long poll of 1 s, the stream's group.
func sdkPop(b *bundle, group string) map[string][]sdkMessage {
	b.t.Helper()
	code, body := b.do("GET", "/api/v1/pop/queue/"+b.queue+"?batch=200&wait=true&timeout=1000&consumerGroup="+group+"&partitions=4", nil)
	if code == http.StatusNoContent {
		return nil
	}
	if code != http.StatusOK {
		b.t.Fatalf("pop: %d %s", code, body)
	}
	var p struct {
		Messages []sdkMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		b.t.Fatal(err)
	}
	groups := map[string][]sdkMessage{}
	for _, m := range p.Messages {
		if m.PartitionID == "" || m.Partition == "" || m.LeaseID == "" || m.TransactionID == "" || m.CreatedAt == "" || m.ConsumerGroup == "" {
			b.t.Fatalf("message without a field the SDKs read: %+v", m)
		}
		groups[m.PartitionID] = append(groups[m.PartitionID], m)
	}
	// The JS runner's order: createdAt at millisecond precision, then id.
	for _, g := range groups {
		sort.SliceStable(g, func(i, j int) bool {
			ti, tj := sdkMillis(b.t, g[i].CreatedAt), sdkMillis(b.t, g[j].CreatedAt)
			if ti != tj {
				return ti < tj
			}
			return g[i].ID < g[j].ID
		})
	}
	return groups
}

func sdkMillis(t testing.TB, s string) int64 {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("createdAt %q: %v", s, err)
	}
	return ts.UnixMilli()
}

// window is the value a tumbling window's state row holds in the SDKs.
type window struct {
	Acc         map[string]float64 `json:"acc"`
	WindowStart int64              `json:"windowStart"`
	WindowEnd   int64              `json:"windowEnd"`
}

func TestS54_TumblingWindowAsTheJSSDKRunsIt(t *testing.T) {
	b := setup(t, testserver.Options{})
	sink := b.queue + ".totals"
	for p := range 3 {
		items := make([]obj, 6)
		for i := range items {
			items[i] = obj{"payload": obj{"amount": p*10 + i}}
		}
		b.push("part-"+strconv.Itoa(p), items...)
	}
	const size = 2000 // windowTumbling({seconds: 2, idleFlushMs: 1000})
	const prefix = "tumb:2\u001f"
	group := "streams." + b.queue
	reg := b.register(b.queue, "js-tumbling-2s", obj{"sink_queue": sink, "reset": false}, http.StatusOK)
	touched := map[string]string{} // partition id -> name

	emit := func(pid, pname string, w window) obj {
		return obj{"queue": sink, "partition": pname, "payload": obj{"count": w.Acc["count"], "sum": w.Acc["sum"],
			"windowStart": w.WindowStart, "partition": pname}}
	}
	// The main loop, until a pop finds nothing.
	for groups := sdkPop(b, group); groups != nil; groups = sdkPop(b, group) {
		for pid, msgs := range groups {
			touched[pid] = msgs[0].Partition
			open := map[string]window{}
			for _, r := range b.state(obj{"query_id": reg.QueryID, "partition_id": pid, "keys": []string{}}) {
				var w window
				if err := json.Unmarshal(r.Value, &w); err != nil {
					t.Fatal(err)
				}
				open[r.Key] = w
			}
			var maxCreated int64
			for _, m := range msgs {
				at := sdkMillis(t, m.CreatedAt)
				maxCreated = max(maxCreated, at)
				start := at / size * size
				key := prefix + time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z") + "\u001f" + pid
				w, ok := open[key]
				if !ok {
					w = window{Acc: map[string]float64{}, WindowStart: start, WindowEnd: start + size}
				}
				var v struct{ Amount float64 }
				_ = json.Unmarshal(m.Data, &v)
				w.Acc["count"]++
				w.Acc["sum"] += v.Amount
				open[key] = w
			}
			var ops, items []obj
			for key, w := range open {
				if w.WindowEnd <= maxCreated { // closes on the batch's largest createdAt
					ops = append(ops, obj{"type": "delete", "key": key})
					items = append(items, emit(pid, msgs[0].Partition, w))
				} else {
					ops = append(ops, obj{"type": "upsert", "key": key, "value": w})
				}
			}
			last := msgs[len(msgs)-1]
			r := b.cycle(obj{"query_id": reg.QueryID, "partition_id": pid, "consumer_group": group, "state_ops": ops,
				"push_items": items, "release_lease": true,
				"ack": obj{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": len(msgs)}})
			if !r.Success {
				t.Fatalf("cycle: %+v", r)
			}
		}
	}
	if len(touched) != 3 {
		t.Fatalf("partitions seen %v", touched)
	}
	// The idle flush, every second, until every window was emitted.
	testkit.Eventually(t, time.Minute, time.Second, func() error {
		left := 0
		for pid, pname := range touched {
			rows := b.state(obj{"query_id": reg.QueryID, "partition_id": pid, "key_prefix": prefix,
				"ripe_at_or_before": time.Now().UnixMilli()})
			var ops, items []obj
			for _, row := range rows {
				var w window
				_ = json.Unmarshal(row.Value, &w)
				ops = append(ops, obj{"type": "delete", "key": row.Key})
				items = append(items, emit(pid, pname, w))
			}
			if len(rows) > 0 {
				if r := b.cycle(obj{"query_id": reg.QueryID, "partition_id": pid, "consumer_group": group,
					"state_ops": ops, "push_items": items, "ack": nil, "release_lease": true}); !r.Success {
					return fmt.Errorf("flush: %+v", r)
				}
			}
			left += len(b.state(obj{"query_id": reg.QueryID, "partition_id": pid}))
		}
		if left > 0 {
			return fmt.Errorf("%d windows open", left)
		}
		return nil
	})
	totals := map[string][2]float64{}
	for _, raw := range b.popAll(sink) {
		var e struct {
			Count, Sum float64
			Partition  string
		}
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatal(err)
		}
		c := totals[e.Partition]
		totals[e.Partition] = [2]float64{c[0] + e.Count, c[1] + e.Sum}
	}
	for p := range 3 {
		want := [2]float64{6, float64(6*p*10 + 15)}
		if got := totals["part-"+strconv.Itoa(p)]; got != want {
			t.Fatalf("part-%d: count and sum %v, want %v (all: %v)", p, got, want, totals)
		}
	}
}

func TestS55_TokenBucketGateAsTheGoSDKRunsIt(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.configure(obj{"leaseTime": 2})
	sink := b.queue + ".allowed"
	for _, p := range []string{"A", "B"} {
		items := make([]obj, 30)
		for i := range items {
			items[i] = obj{"payload": obj{"n": i}}
		}
		b.push(p, items...)
	}
	group := "streams." + b.queue
	reg := b.register(b.queue, "go-gate", obj{"sink_queue": sink}, http.StatusOK)
	const capacity, refill = 10.0, 5.0 // tokens, tokens per second
	allows := 0
	delivered := map[string][]int{}
	testkit.Eventually(t, 2*time.Minute, time.Millisecond, func() error {
		groups := sdkPop(b, group)
		for pid, msgs := range groups {
			var st struct {
				Tokens       *float64 `json:"tokens"`
				LastRefillAt int64    `json:"lastRefillAt"`
			}
			// The Go SDK reads the shard with "keys":null.
			if rows := b.state(obj{"query_id": reg.QueryID, "partition_id": pid, "keys": nil}); len(rows) == 1 {
				_ = json.Unmarshal(rows[0].Value, &st)
			}
			now := time.Now().UnixMilli()
			tokens := capacity
			if st.Tokens != nil {
				tokens = math.Min(capacity, *st.Tokens+float64(now-st.LastRefillAt)/1000*refill)
			}
			n := 0
			for n < len(msgs) && tokens >= 1 {
				tokens--
				n++
			}
			if n == 0 {
				continue // the first message is denied: no cycle, the lease runs out
			}
			allows += n
			var items []obj
			for _, m := range msgs[:n] {
				var v struct{ N int }
				_ = json.Unmarshal(m.Data, &v)
				delivered[m.Partition] = append(delivered[m.Partition], v.N)
				items = append(items, obj{"queue": sink, "partition": m.Partition, "payload": m.Data})
			}
			last := msgs[n-1]
			r := b.cycle(obj{"query_id": reg.QueryID, "partition_id": pid, "consumer_group": group,
				"state_ops":  []obj{{"type": "upsert", "key": pid, "value": obj{"tokens": tokens, "lastRefillAt": now}}},
				"push_items": items, "release_lease": n == len(msgs),
				"ack": obj{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": n}})
			if !r.Success {
				return fmt.Errorf("cycle: %+v", r)
			}
		}
		if allows < 60 {
			return fmt.Errorf("%d allowed", allows)
		}
		return nil
	})
	if allows != 60 {
		t.Fatalf("%d allows", allows)
	}
	for _, p := range []string{"A", "B"} {
		got := delivered[p]
		if len(got) != 30 {
			t.Fatalf("%s: %v", p, got)
		}
		for i, n := range got {
			if n != i {
				t.Fatalf("%s delivered out of order: %v", p, got)
			}
		}
	}
	if n := len(b.popAll(sink)); n != 60 {
		t.Fatalf("%d sink messages", n)
	}
}
