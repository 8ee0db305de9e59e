package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// Moving messages to the DLQ by request while consumers drain the partition
// (docs/api/concepts.md §9.1): a message moved mid-backlog is never delivered to the group it
// was moved for, while every message around it is delivered exactly once and in order. Run
// with -race.

func TestMoveToDLQMidBacklogUnderConcurrentPops(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	const n = 150
	keys := make([]string, n)
	items := make([]mq.PushItem, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
		items[i] = item(q, "p", keys[i], `{}`)
	}
	res := x.push(items...)
	pid := res[0].PartitionID
	ctx := context.Background()

	var mu sync.Mutex
	var delivered []string
	moved := map[string]bool{}
	var movers, consumers sync.WaitGroup
	stop := make(chan struct{})

	movers.Add(1)
	go func() { // moves every 5th message, front to back, racing the consumers
		defer movers.Done()
		for i := 2; i < n; i += 5 {
			out, found, err := x.st.MoveToDLQ(ctx, pid, keys[i], mq.QueueMode, "by request")
			if err != nil || !found || len(out) != 1 {
				t.Errorf("move %s: %+v %v %v", keys[i], out, found, err)
				return
			}
			if out[0].Action == mq.ActionMoved {
				mu.Lock()
				moved[keys[i]] = true
				mu.Unlock()
			} else if out[0].Reason != "Message is leased" && out[0].Reason != "Message already consumed" {
				t.Errorf("move %s: %+v", keys[i], out[0])
			}
		}
	}()
	for range 4 {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := x.b.Pop(ctx, mq.PopRequest{Queue: q, Partition: "p", Batch: 3})
				if err != nil {
					t.Errorf("pop: %v", err)
					return
				}
				if len(p.Messages) == 0 {
					time.Sleep(time.Millisecond) // a consumer's poll interval, not an ordering
					continue
				}
				mu.Lock()
				for _, m := range p.Messages {
					delivered = append(delivered, m.TransactionID)
				}
				mu.Unlock()
				last := p.Messages[len(p.Messages)-1]
				r, err := x.b.Ack(ctx, []mq.AckItem{{PartitionID: last.PartitionID, TransactionID: last.TransactionID,
					Group: mq.QueueMode, Status: mq.AckCompleted, LeaseID: p.LeaseID}})
				if err != nil || !r[0].Success {
					t.Errorf("ack: %+v %v", r, err)
					return
				}
			}
		}()
	}
	movers.Wait()
	testkit.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got := len(delivered) + len(moved); got < n {
			return fmt.Errorf("%d of %d messages delivered or moved", got, n)
		}
		return nil
	})
	close(stop)
	consumers.Wait()

	var want []string
	for _, k := range keys {
		if !moved[k] {
			want = append(want, k)
		}
	}
	if !slices.Equal(delivered, want) {
		t.Fatalf("delivered %d messages %v,\nwant %d (every message but the %d moved, once, in order)",
			len(delivered), delivered, len(want), len(moved))
	}
	t.Logf("%d of %d moves happened before their message was delivered", len(moved), n/5)
	var entries int
	if err := rawDB(t).QueryRow(ctx, `SELECT count(*) FROM dlq WHERE queue_name = $1`, q).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != len(moved) {
		t.Fatalf("%d DLQ entries for %d moves", entries, len(moved))
	}
}

// Concurrent moves of one message for one group write one DLQ entry; every call reports it
// moved.
func TestMoveToDLQRepeatedConcurrently(t *testing.T) {
	x := newBroker(t, Config{})
	q := queueName(t)
	res := x.push(item(q, "p", "a", `{}`), item(q, "p", "b", `{}`), item(q, "p", "c", `{}`))
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, found, err := x.st.MoveToDLQ(ctx, res[1].PartitionID, "b", "", "x")
			if err != nil || !found || len(out) != 1 || out[0].Action != mq.ActionMoved {
				t.Errorf("move: %+v %v %v", out, found, err)
			}
		}()
	}
	wg.Wait()
	var entries int
	if err := rawDB(t).QueryRow(ctx, `SELECT count(*) FROM dlq WHERE queue_name = $1`, q).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != 1 {
		t.Fatalf("%d DLQ entries, want 1", entries)
	}
	p := x.pop(mq.PopRequest{Queue: q, Batch: 10})
	var got []string
	for _, m := range p.Messages {
		got = append(got, m.TransactionID)
	}
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("delivered %v, want a c", got)
	}
}
