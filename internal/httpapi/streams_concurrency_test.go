package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Claims S38-S40 of docs/api/streams.md §10 and the races of the cycle: concurrent cycles on
// one shard, across the shards of one query, and the same ack sent several times at once.

// cycleAsync sends a cycle from any goroutine and decodes its answer.
func cycleAsync(b *bundle, body obj) (streamCycled, error) {
	resp, out, err := roundTrip(b.t.Context(), http.DefaultClient, "POST", b.srv.URL+"/streams/v1/cycle", body, nil)
	if err != nil {
		return streamCycled{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return streamCycled{}, fmt.Errorf("%d %s", resp.StatusCode, out)
	}
	var r streamCycled
	if err := jsonUnmarshal(out, &r); err != nil {
		return r, err
	}
	return r, nil
}

func TestS38_CyclesPushingInOppositeOrders(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 0)
	// Eight source partitions, one per client, so the clients' cycles run concurrently.
	pids := make([]string, 8)
	for i := range pids {
		pids[i] = b.push("src-"+strconv.Itoa(i), obj{"payload": i})[0].PartitionID
	}
	sink := b.queue + ".sink"
	parts := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	var committed atomic.Int64
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 15 {
				items := make([]obj, 4)
				for j := range parts {
					p := parts[j]
					if c%2 == 1 {
						p = parts[3-j]
					}
					items[j] = obj{"queue": sink, "partition": p, "payload": obj{"c": c, "k": k}}
				}
				r, err := cycleAsync(b, obj{"query_id": s.queryID, "partition_id": pids[c], "push_items": items,
					"state_ops": []obj{{"type": "upsert", "key": "k", "value": k}}})
				if err != nil || !r.Success {
					t.Errorf("client %d cycle %d: %v %+v", c, k, err, r)
					return
				}
				committed.Add(1)
			}
		}()
	}
	wg.Wait()
	if committed.Load() != 120 {
		t.Fatalf("%d cycles committed", committed.Load())
	}
	if n := countRows(t, `SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = $1`, sink); n != 480 {
		t.Fatalf("%d sink messages", n)
	}
}

func TestS39_ConcurrentCyclesOnOneShard(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := cycleAsync(b, s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k" + strconv.Itoa(i), "value": i}}}))
			if err != nil || !r.Success {
				t.Errorf("cycle %d: %v %+v", i, err, r)
			}
		}()
	}
	wg.Wait()
	if rows := s.state(s.shard(nil)); len(rows) != 20 {
		t.Fatalf("%d keys", len(rows))
	}
}

func TestS40_OneCyclePerPartitionOfAPop(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 0)
	b.push("A", obj{"payload": 1, "transactionId": "a1"}, obj{"payload": 2, "transactionId": "a2"})
	b.push("B", obj{"payload": 3, "transactionId": "b1"})
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&partitions=2&wait=false&consumerGroup=" + s.group)
	if !ok || len(p.Messages) != 3 {
		t.Fatalf("pop %v %+v", ok, p)
	}
	last := map[string]string{}
	for _, m := range p.Messages {
		last[m.PartitionID] = m.TransactionID
	}
	if len(last) != 2 {
		t.Fatalf("partitions %v", last)
	}
	for pid, tx := range last {
		r := s.cycle(obj{"query_id": s.queryID, "partition_id": pid, "consumer_group": s.group,
			"ack": obj{"transactionId": tx, "leaseId": p.LeaseID}})
		if !r.Success || !r.AckResult.LeaseReleased {
			t.Fatalf("%s: %+v", pid, r)
		}
	}
	if _, ok := s.popGroup(); ok {
		t.Fatal("messages left")
	}
}

// The same ack-bearing cycle sent 8 times at once (an SDK retrying while the first attempt is
// still running): exactly one commits, the others answer "Message already committed", and its
// output exists once.
func TestStreamsRaceSameCycleOnOnePartition(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 5)
	sink := b.queue + ".sink"
	body := s.body(obj{"ack": s.ackOf(5), "push_items": []obj{{"queue": sink, "payload": "out"}},
		"state_ops": []obj{{"type": "upsert", "key": "n", "value": 1}}})
	var wg sync.WaitGroup
	results := make([]streamCycled, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := cycleAsync(b, body)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch {
		case r.Success:
			ok++
		case r.Error != "Message already committed":
			t.Fatalf("%+v", r)
		}
	}
	if ok != 1 {
		t.Fatalf("%d commits", ok)
	}
	if got := b.popAll(sink); len(got) != 1 {
		t.Fatalf("sink %v", got)
	}
}

// Cycles of several partitions of one query, each acking its own batch, all commit at once.
func TestStreamsRaceAcrossPartitionsOfOneQuery(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 0)
	sink := b.queue + ".sink"
	const parts = 6
	for i := range parts {
		b.push("p"+strconv.Itoa(i), obj{"payload": 1, "transactionId": "x" + strconv.Itoa(i)})
	}
	var pops []popped
	for {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&wait=false&consumerGroup=" + s.group)
		if !ok {
			break
		}
		pops = append(pops, p)
	}
	if len(pops) != parts {
		t.Fatalf("%d pops", len(pops))
	}
	var wg sync.WaitGroup
	for _, p := range pops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every cycle also writes every sink partition, in its own order.
			items := []obj{}
			for j := range parts {
				items = append(items, obj{"queue": sink, "partition": "s" + strconv.Itoa((j+len(p.PartitionID))%parts), "payload": 1})
			}
			r, err := cycleAsync(b, obj{"query_id": s.queryID, "partition_id": p.PartitionID, "consumer_group": s.group,
				"ack":        obj{"transactionId": p.Messages[0].TransactionID, "leaseId": p.LeaseID},
				"push_items": items, "state_ops": []obj{{"type": "upsert", "key": "seen", "value": true}}})
			if err != nil || !r.Success || r.AckResult.Count != 1 {
				t.Errorf("%s: %v %+v", p.PartitionID, err, r)
			}
		}()
	}
	wg.Wait()
	if n := countRows(t, "SELECT count(*) FROM stream_state WHERE query_id = $1", s.queryID); n != parts {
		t.Fatalf("%d state rows", n)
	}
	if got := b.popAll(sink); len(got) != parts*parts {
		t.Fatalf("%d sink messages", len(got))
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
