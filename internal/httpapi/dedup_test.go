package httpapi_test

// Deduplication of transactionIds (concepts.md §4.3).

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

func TestDedupWithinOneRequest(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("pA", obj{"payload": "first", "transactionId": "k1"}, obj{"payload": "second", "transactionId": "k1"},
		obj{"payload": "other", "transactionId": "k2"}, obj{"payload": "third", "transactionId": "k1"})
	if res[0].Status != "queued" || res[2].Status != "queued" {
		t.Fatalf("push %+v", res)
	}
	for _, i := range []int{1, 3} {
		if r := res[i]; r.Status != "duplicate" || r.MessageID != res[0].MessageID || r.TransactionID != "k1" || r.Index != i {
			t.Fatalf("item %d: %+v, want duplicate of %s", i, r, res[0].MessageID)
		}
	}
	p := b.semMustPop(b.semQ("batch=10"), "k1", "k2")
	if string(p.Messages[0].Data) != `"first"` || p.Messages[0].ID != res[0].MessageID {
		t.Fatalf("the first item must win: %+v", p.Messages[0])
	}
}

func TestDedupAcrossRequestsAndPartitions(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"dedupWindowSeconds": 60}})
	first := b.semPushKeys("pA", "k1")[0]
	// The same key in another partition is another message.
	other := b.semPushKeys("pB", "k1")[0]
	if other.MessageID == first.MessageID || other.PartitionID == first.PartitionID {
		t.Fatalf("pA %+v, pB %+v", first, other)
	}
	// Consumed or not, and past the window, a stored message keeps its key taken.
	p := b.semMustPop(b.semQP("pA", ""), "k1")
	b.semMustAck(semAckOf(p, 0, "completed"))
	b.srv.Clock.Advance(10 * time.Minute)
	for _, part := range []string{"pA", "pB"} {
		res := b.push(part, obj{"payload": "again", "transactionId": "k1"})
		want := first.MessageID
		if part == "pB" {
			want = other.MessageID
		}
		if res[0].Status != "duplicate" || res[0].MessageID != want {
			t.Fatalf("%s: %+v, want duplicate of %s", part, res[0], want)
		}
	}
	b.semNoPop(b.semQP("pA", ""))
}

// semRemove deletes a stored message the way retention does: the row goes, its key is kept as
// a tombstone with the message's id and createdAt.
func semRemove(t *testing.T, partitionID, key string) {
	t.Helper()
	stateExec(t, `WITH gone AS (DELETE FROM messages WHERE partition_id = $1 AND transaction_id = $2
			RETURNING partition_id, transaction_id, id, created_at)
		INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at)
		SELECT * FROM gone`, partitionID, key)
}

func TestDedupWindowAfterRemoval(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.semConfigure(b.queue, obj{"options": obj{"dedupWindowSeconds": 60}})
	gone := b.semPushKeys("pA", "k1", "k2")
	semRemove(t, gone[0].PartitionID, "k1")
	semRemove(t, gone[0].PartitionID, "k2")

	// Younger than the window: still taken, reported with the removed message's id.
	b.srv.Clock.Advance(59 * time.Second)
	if res := b.push("pA", obj{"payload": 1, "transactionId": "k1"}); res[0].Status != "duplicate" ||
		res[0].MessageID != gone[0].MessageID {
		t.Fatalf("inside the window: %+v", res[0])
	}
	// The window in force is the queue's current one.
	b.semConfigure(b.queue, obj{"options": obj{"dedupWindowSeconds": 30}})
	fresh := b.push("pA", obj{"payload": 2, "transactionId": "k2"})[0]
	if fresh.Status != "queued" || fresh.MessageID == gone[1].MessageID {
		t.Fatalf("after shrinking the window: %+v", fresh)
	}
	b.semConfigure(b.queue, obj{"options": obj{"dedupWindowSeconds": 60}})
	// Older than the window: free again.
	b.srv.Clock.Advance(time.Second)
	res := b.push("pA", obj{"payload": 3, "transactionId": "k1"})
	if res[0].Status != "queued" || res[0].MessageID == gone[0].MessageID {
		t.Fatalf("after the window: %+v", res[0])
	}
	if got := b.semDrain(b.semQ("batch=10")); !slices.Equal(got, []string{"k2", "k1"}) {
		t.Fatalf("delivered %v", got)
	}
	// The new message takes the key again.
	if res := b.push("pA", obj{"payload": 4, "transactionId": "k1"}); res[0].Status != "duplicate" {
		t.Fatalf("re-stored key: %+v", res[0])
	}
}

func TestDedupConcurrentWritersStoreOneMessage(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semPushKeys("pA", "warm") // the partition exists: writers meet on its lock
	const n = 8
	ids := make(chan string, n)
	done := make(chan struct{})
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			code, body, err := semSend("POST", b.srv.URL+"/api/v1/push",
				obj{"items": []obj{{"queue": b.queue, "partition": "pA", "payload": 1, "transactionId": "same"}}})
			if err != nil || code != http.StatusCreated {
				t.Errorf("push: %d %s %v", code, body, err)
				return
			}
			var res []pushed
			if err := json.Unmarshal(body, &res); err != nil || len(res) != 1 {
				t.Errorf("push answer %s", body)
				return
			}
			ids <- res[0].MessageID
		}()
	}
	for range n {
		<-done
	}
	close(ids)
	var first string
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first {
			t.Fatalf("concurrent pushes of one key answered different ids %s, %s", first, id)
		}
	}
	var count int
	if err := stateDB(t).QueryRow(context.Background(), `SELECT count(*) FROM messages m
		JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND m.transaction_id = 'same'`, b.queue).Scan(&count); err != nil || count != 1 {
		t.Fatalf("stored %d messages (%v)", count, err)
	}
}
