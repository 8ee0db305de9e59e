package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/mq"
)

// One call naming several (queue, partition) pairs, interleaved and repeated, some of them
// new: each item lands in the partition it names (the names travel once per distinct pair).
func TestPushResolvesEachItemsPartition(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "push_pairs")
	pairs := [][2]string{{"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-a", "p2"}, {"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-c", "Default"}}
	var items []PushRow
	for i := range 4 {
		for _, p := range pairs {
			items = append(items, PushRow{Queue: p[0], Partition: p[1], Key: fmt.Sprint("k-", i, "-", p[0], "-", p[1], "-", len(items)),
				ID: uuid.NewString(), Payload: []byte(`{}`)})
		}
	}
	res, err := s.Push(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(items) {
		t.Fatalf("%d results for %d items", len(res), len(items))
	}
	for i, r := range res {
		var queue, partition string
		if err := s.pool.QueryRow(ctx, `SELECT q.name, p.name FROM partitions p JOIN queues q ON q.id = p.queue_id
			WHERE p.id = $1`, r.PartitionID).Scan(&queue, &partition); err != nil {
			t.Fatal(err)
		}
		if r.Status != mq.StatusQueued || queue != items[i].Queue || partition != items[i].Partition || r.Queue != items[i].Queue {
			t.Fatalf("item %d (%s/%s): %+v in %s/%s", i, items[i].Queue, items[i].Partition, r, queue, partition)
		}
	}
}

// A push names partitions whose ids this store remembers from earlier pushes. When one was
// deleted meanwhile (here with its queue, possibly by another instance), the push finds it
// missing, resolves the names again, creates the queue anew and writes there.
func TestPushAfterItsPartitionWasDeletedWritesToTheNewOne(t *testing.T) {
	ctx := context.Background()
	s, other := migratedSchema(t, "push_cache"), openSchema(t, "push_cache")
	const queue = "cached"
	push := func(key string) mq.PushResult {
		t.Helper()
		res, err := s.Push(ctx, []PushRow{{Queue: queue, Partition: "p", Key: key, ID: uuid.NewString(), Payload: []byte(`1`)}})
		if err != nil || len(res) != 1 || res[0].Status != mq.StatusQueued {
			t.Fatalf("push %s: %v %+v", key, err, res)
		}
		return res[0]
	}
	first := push("k1")
	if again := push("k2"); again.PartitionID != first.PartitionID {
		t.Fatalf("same partition, ids %s then %s", first.PartitionID, again.PartitionID)
	}
	if existed, err := other.DeleteQueue(ctx, queue); err != nil || !existed {
		t.Fatalf("delete: %v %v", existed, err)
	}
	recreated := push("k1") // the key is free again: the old message went with its queue
	if recreated.PartitionID == first.PartitionID {
		t.Fatalf("wrote to the deleted partition %s", first.PartitionID)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE partition_id = $1", recreated.PartitionID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("messages in the new partition: %d, %v", n, err)
	}
	if ids := s.partitions.lookup([]string{queue}, []string{"p"}); len(ids) != 1 || ids[0] != recreated.PartitionID {
		t.Fatalf("remembered %v, want the new id %s", ids, recreated.PartitionID)
	}
}

// The cache of partition ids starts over instead of growing past its bound.
func TestPartitionCacheStaysBounded(t *testing.T) {
	c := partitionCache{maxEntries: 3}
	for i := range 10 {
		c.remember([]string{"q"}, []string{fmt.Sprint(i)}, []string{fmt.Sprint("id", i)})
		if len(c.ids) > 3 {
			t.Fatalf("%d entries after %d pairs", len(c.ids), i+1)
		}
	}
	if ids := c.lookup([]string{"q"}, []string{"9"}); len(ids) != 1 || ids[0] != "id9" {
		t.Fatalf("the newest pair is not remembered: %v", ids)
	}
	if c.lookup([]string{"q", "q"}, []string{"9", "0"}) != nil {
		t.Fatal("a lookup with an unknown pair must resolve all names")
	}
}
