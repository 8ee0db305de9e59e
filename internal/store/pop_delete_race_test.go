package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// A pop racing the deletion of its queue finds nothing; it never fails. Its group's
// registration and first claims insert rows that reference the queue and its partitions, so a
// deletion committed in between made the pop fail with a foreign-key violation (a 500).
func TestPopRacingQueueDeletionFindsNothing(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for i := range 40 {
		q := fmt.Sprintf("race-%d", i)
		for _, p := range []string{"a", "b", "c"} {
			id := uuid.Must(uuid.NewV7()).String()
			if _, err := b.s.Push(ctx, []PushRow{{Queue: q, Partition: p, Key: id, ID: id, Payload: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.s.Pop(ctx, PopRequest{Queue: q, Group: fmt.Sprintf("g%d", g), Batch: 1, Partitions: 3,
					LeaseID: uuid.Must(uuid.NewV7()).String(), SubscriptionMode: "all"})
				errs <- err
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.s.DeleteQueue(ctx, q)
			errs <- err
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
}
