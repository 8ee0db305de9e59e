package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
	"github.com/queen-go/queen/internal/testkit"
)

// An ack in a tenant's scope checks that each of its partitions belongs to the tenant once per
// call, not once per item: a batch of a thousand acks over four partitions must not look up a
// partition a thousand times (a per-item check halved pop + ack's speed for every tenant,
// the default one included).
func TestAckChecksEachPartitionsTenantOnce(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "ack_scope_once")
	ctx := tenant.With(context.Background(), "acme")
	const parts, perPart = 4, 250
	lease := uuid.NewString()
	var items []mq.AckItem
	// Six rounds: after five, PL/pgSQL may keep a generic plan of each statement, which is
	// where a per-item probe shows; the last round is the one counted.
	for round := range 7 {
		var rows []PushRow
		for i := range parts * perPart {
			rows = append(rows, PushRow{Queue: "scoped", Partition: fmt.Sprint("p", i%parts),
				Key: fmt.Sprint("r", round, "-", i), ID: uuid.NewString(), Payload: []byte(`{}`)})
		}
		if _, err := s.Push(ctx, rows); err != nil {
			t.Fatal(err)
		}
		// A partition's items of one push get createdAt a millisecond apart, some ahead of the
		// clock; a pop delivers none before its createdAt.
		testkit.Eventually(t, time.Minute, 10*time.Millisecond, func() error {
			var ahead bool
			err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
				return c.QueryRow(ctx, "SELECT max(created_at) > clock_timestamp() FROM messages").Scan(&ahead)
			})
			if err == nil && ahead {
				err = errors.New("messages ahead of the clock")
			}
			return err
		})
		items = items[:0]
		for p := range parts {
			msgs, err := s.Pop(ctx, PopRequest{Queue: "scoped", Partition: fmt.Sprint("p", p), Group: mq.QueueMode, Batch: perPart, Partitions: 1,
				LeaseID: lease, SubscriptionMode: "all"})
			if err != nil || len(msgs) != perPart {
				t.Fatalf("round %d: pop: %d messages, %v", round, len(msgs), err)
			}
			for _, m := range msgs {
				items = append(items, mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
					Group: mq.QueueMode, Status: mq.AckCompleted, LeaseID: lease})
			}
		}
		if round == 6 {
			break // acked below, counted
		}
		if _, err := s.Ack(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	before := indexScans(t, s, "partitions_pkey")
	res, err := s.Ack(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Success {
			t.Fatalf("ack %d of %d failed: %v", i, len(res), r.Error)
		}
	}
	if n := indexScans(t, s, "partitions_pkey") - before; n > 4*parts {
		t.Fatalf("one ack of %d items over %d partitions scanned partitions_pkey %d times; want a few per partition", len(items), parts, n)
	}
}

// Acks of another tenant's messages are acks of unknown ones, and change nothing, whether the
// batch names that tenant's partition alone (one probe for the whole batch) or beside the
// caller's own.
func TestAckOfAnotherTenantsPartitionIsNotFound(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "ack_scope_foreign")
	bg := context.Background()
	popOf := func(ctx context.Context, keys ...string) []mq.AckItem {
		t.Helper()
		var rows []PushRow
		for _, k := range keys {
			rows = append(rows, PushRow{Queue: "same", Partition: "p", Key: k, ID: uuid.NewString(), Payload: []byte(`{}`)})
		}
		if _, err := s.Push(ctx, rows); err != nil {
			t.Fatal(err)
		}
		var items []mq.AckItem
		lease := uuid.NewString()
		testkit.Eventually(t, time.Minute, 10*time.Millisecond, func() error {
			msgs, err := s.Pop(ctx, PopRequest{Queue: "same", Group: mq.QueueMode, Batch: len(keys), Partitions: 1,
				LeaseID: lease, SubscriptionMode: "all"})
			if err != nil {
				return err
			}
			for _, m := range msgs {
				items = append(items, mq.AckItem{PartitionID: m.PartitionID, TransactionID: m.TransactionID,
					Group: mq.QueueMode, Status: mq.AckCompleted, LeaseID: lease})
			}
			if len(items) < len(keys) {
				return fmt.Errorf("%d of %d messages popped", len(items), len(keys))
			}
			return nil
		})
		return items
	}
	a, b := tenant.With(bg, "a"), tenant.With(bg, "b")
	ofA := popOf(a, "a1", "a2", "a3")
	ofB := popOf(b, "b1", "b2")
	check := func(name string, got []mq.AckResult, want ...bool) {
		t.Helper()
		for i, r := range got {
			if r.Success != want[i] || (!r.Success && (r.Error == nil || *r.Error != "Message not found")) {
				t.Fatalf("%s: item %d: success %v, error %v; want success %v or Message not found", name, i, r.Success, r.Error, want[i])
			}
		}
	}
	res, err := s.Ack(b, ofA)
	if err != nil {
		t.Fatal(err)
	}
	check("B acks A's batch", res, false, false, false)
	// A merged call: each request checked on its own (one item goes the single-ack path).
	many, err := s.AckMany(b, [][]mq.AckItem{ofA, ofA[:1], ofB[:1]})
	if err != nil {
		t.Fatal(err)
	}
	check("B's merged call, request of A's batch", many[0], false, false, false)
	check("B's merged call, request of one of A's", many[1], false)
	check("B's merged call, request of its own", many[2], true)
	res, err = s.Ack(b, []mq.AckItem{ofA[0], ofB[1]})
	if err != nil {
		t.Fatal(err)
	}
	check("B acks one of A's beside its own", res, false, true)
	res, err = s.Ack(a, ofA)
	if err != nil {
		t.Fatal(err)
	}
	check("A acks its batch, untouched by B", res, true, true, true)
}
