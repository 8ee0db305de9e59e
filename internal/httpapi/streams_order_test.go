package httpapi_test

import (
	"net/http"
	"sort"
	"sync"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// S53 (docs/api/streams.md §7, §10): within a partition, sorting messages by (createdAt cut to
// the millisecond, then id) gives the order a pop delivers them, whoever wrote them. Eight
// producers push into one partition through two broker instances on one database; the ids are
// minted by the instances before the partition lock, so without createdAt being assigned under
// the lock the two orders disagree.
func TestS53_CreatedAtAndIDFollowPositions(t *testing.T) {
	b := setup(t, testserver.Options{})
	other := testserver.Start(t, testDSN, testserver.Options{})
	urls := []string{b.srv.URL, other.URL}
	const producers, rounds = 8, 40
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				items := make([]obj, 1+(p+r)%3)
				for i := range items {
					items[i] = obj{"queue": b.queue, "partition": "one", "payload": obj{"p": p, "r": r, "i": i}}
				}
				resp, body, err := roundTrip(t.Context(), http.DefaultClient, "POST", urls[p%2]+"/api/v1/push", obj{"items": items}, nil)
				if err != nil || resp.StatusCode != http.StatusCreated {
					t.Errorf("producer %d: %v %s", p, err, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	type msg struct {
		id, ms string
		pos    int
	}
	var delivered []msg
	for {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=1000&wait=false&consumerGroup=order")
		if !ok {
			break
		}
		for _, m := range p.Messages {
			if len(m.CreatedAt) < 23 {
				t.Fatalf("createdAt %q", m.CreatedAt)
			}
			delivered = append(delivered, msg{id: m.ID, ms: m.CreatedAt[:23], pos: len(delivered)})
		}
		if a := b.ack(obj{"transactionId": p.Messages[len(p.Messages)-1].TransactionID, "partitionId": p.PartitionID,
			"leaseId": p.LeaseID, "consumerGroup": "order"}); !a.Success {
			t.Fatalf("ack %+v", a)
		}
	}
	want := 0
	for p := range producers {
		for r := range rounds {
			want += 1 + (p+r)%3
		}
	}
	if len(delivered) != want {
		t.Fatalf("%d messages, want %d", len(delivered), want)
	}
	sorted := append([]msg(nil), delivered...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].ms != sorted[j].ms {
			return sorted[i].ms < sorted[j].ms
		}
		return sorted[i].id < sorted[j].id
	})
	bad, first := 0, -1
	for i := range sorted {
		if sorted[i].pos != i {
			if bad++; first < 0 {
				first = i
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d messages out of place when sorted by (createdAt ms, id); the first at position %d",
			bad, len(sorted), first)
	}
}
