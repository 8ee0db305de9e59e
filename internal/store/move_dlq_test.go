package store

// Moving a message to the DLQ by request (qg_move_to_dlq) and the skip marks qg_claim honours
// (docs/api/concepts.md §9.1, §6.1).

import (
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// move moves key of partition p to the DLQ for group ("" = every consumer) and returns the
// outcomes as "group:action[:reason]".
func (b *testBundle) move(pid, key, group string) []string {
	b.t.Helper()
	out, found, err := b.s.MoveToDLQ(b.ctx, pid, key, group, mq.DefaultMoveReason)
	if err != nil {
		b.t.Fatal(err)
	}
	if !found {
		return nil
	}
	var s []string
	for _, g := range out {
		v := g.Group + ":" + g.Action
		if g.Reason != "" {
			v += ":" + g.Reason
		}
		s = append(s, v)
	}
	return s
}

func TestMoveToDLQSkipsMidBacklog(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c", "d")
	pid := res[0].PartitionID

	// No consumer yet: queue mode gets a cursor (0) and the mark.
	if got := b.move(pid, "b", ""); !slices.Equal(got, []string{"__QUEUE_MODE__:moved"}) {
		t.Fatalf("move b: %v", got)
	}
	if got := b.move(pid, "b", ""); !slices.Equal(got, []string{"__QUEUE_MODE__:moved"}) { // idempotent
		t.Fatalf("move b again: %v", got)
	}
	if d := b.dlq(b.queue); len(d) != 1 || d[0].TransactionID != "b" || d[0].Error != mq.DefaultMoveReason || d[0].RetryCount != 0 {
		t.Fatalf("dlq %+v", d)
	}
	// Delivered around it, in order; the cursor is untouched by the move itself.
	if s := b.state(b.queue, "p", mq.QueueMode); s.Cursor != 0 {
		t.Fatalf("cursor %d", s.Cursor)
	}
	if got := b.drain(PopRequest{Batch: 2}); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("delivered %v", got)
	}
	// A named group registered later is a consumer: b is delivered to it.
	if got := b.drain(PopRequest{Group: "g"}); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("group g %v", got)
	}
	// Consumed by every group now; the entry of queue mode keeps it "moved".
	if got := b.move(pid, "b", ""); !slices.Equal(got, []string{"__QUEUE_MODE__:moved", "g:skipped:Message already consumed"}) {
		t.Fatalf("move consumed b: %v", got)
	}
	if got := b.move(pid, "nope", ""); got != nil {
		t.Fatalf("unknown message: %v", got)
	}
	if got := b.move(pid, "a", "stranger"); !slices.Equal(got, []string{"stranger:skipped:Not a consumer of this partition"}) {
		t.Fatalf("stranger: %v", got)
	}
}

func TestMoveToDLQLeasedAndTail(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	pid := res[0].PartitionID
	p := b.mustPop(PopRequest{Batch: 2}, "a", "b")
	if got := b.move(pid, "b", mq.QueueMode); !slices.Equal(got, []string{"__QUEUE_MODE__:skipped:Message is leased"}) {
		t.Fatalf("leased: %v", got)
	}
	// The tail message (after the live batch) can be moved.
	if got := b.move(pid, "c", mq.QueueMode); !slices.Equal(got, []string{"__QUEUE_MODE__:moved"}) {
		t.Fatalf("tail: %v", got)
	}
	b.mustAck(ackOf(p, 1, mq.AckCompleted))
	// Only the marked message is left: nothing is delivered, and the claim passes the cursor over
	// the mark, so the pair leaves the work index.
	b.noPop(PopRequest{})
	if s := b.state(b.queue, "p", mq.QueueMode); s.Cursor != 3 {
		t.Fatalf("cursor %d, want 3 (past the mark)", s.Cursor)
	}
	var marks, work int
	b.s.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM skip_marks), (SELECT count(*) FROM partition_work
		WHERE consumer_group = '__QUEUE_MODE__')`).Scan(&marks, &work)
	if marks != 0 || work != 0 {
		t.Fatalf("marks %d work rows %d, want none", marks, work)
	}
	// A later message is delivered as usual.
	b.pushKeys("p", "d")
	b.mustPop(PopRequest{}, "d")
}

func TestSeekDropsSkipMarks(t *testing.T) {
	b := setup(t)
	res := b.pushKeys("p", "a", "b", "c")
	pid := res[0].PartitionID
	b.drain(PopRequest{Group: "g", Batch: 1}) // registers g and consumes everything
	b.pushKeys("p", "d", "e")
	if got := b.move(pid, "d", "g"); !slices.Equal(got, []string{"g:moved"}) {
		t.Fatalf("move d: %v", got)
	}
	start := time.Unix(0, 0)
	if _, _, err := b.s.SeekQueue(b.ctx, "g", b.queue, &start); err != nil { // back to the start
		t.Fatal(err)
	}
	if got := b.drain(PopRequest{Group: "g", Batch: 5}); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("after seek %v, want every message, d too", got)
	}
}
