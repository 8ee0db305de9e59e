package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// One call naming several (queue, partition) pairs, interleaved and repeated, some of them
// new: each item lands in the partition it names (the names travel once per distinct pair).
func TestPushResolvesEachItemsPartition(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "push_pairs")
	pairs := [][2]string{{"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-a", "p2"}, {"pairs-a", "p1"}, {"pairs-b", "p1"}, {"pairs-c", "Default"}}
	var items []PushItem
	for i := range 4 {
		for _, p := range pairs {
			items = append(items, PushItem{Queue: p[0], Partition: p[1], Key: fmt.Sprint("k-", i, "-", p[0], "-", p[1], "-", len(items)),
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
		if r.Status != StatusQueued || queue != items[i].Queue || partition != items[i].Partition || r.Queue != items[i].Queue {
			t.Fatalf("item %d (%s/%s): %+v in %s/%s", i, items[i].Queue, items[i].Partition, r, queue, partition)
		}
	}
}
