package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// Many writers race for a tenant's last places, each on a partition of its own (so no
// partition lock orders them), several rounds: the stored count never passes the limit, every
// write is either whole or refused with the limit's *mq.LimitError, and the limit is reached.
func TestTenantLimitsHoldUnderRacingPushes(t *testing.T) {
	b := setup(t)
	const rounds, writers, maxMessages, maxQueues = 6, 12, 5, 3
	for round := range rounds {
		name := fmt.Sprint("race-", round)
		ctx := tenant.With(b.ctx, name)
		// The queue exists with every writer's partition, so only the message places are raced.
		var rows []PushRow
		for w := range writers {
			rows = append(rows, row("m", fmt.Sprint("p", w), fmt.Sprint("seed-", w)))
		}
		if _, err := b.s.Push(ctx, rows); err != nil {
			t.Fatal(err)
		}
		b.exec(`DELETE FROM messages m USING partitions p, queue_rows q
			WHERE p.id = m.partition_id AND q.id = p.queue_id AND q.tenant = $1`, name)
		if err := b.s.SetTenantLimits(b.ctx, name, mq.TenantLimits{MaxMessages: ptr(int64(maxMessages)),
			MaxQueues: ptr(int64(maxQueues))}, nil); err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 2*writers)
		for w := range writers {
			wg.Go(func() {
				<-start
				_, err := b.s.Push(ctx, []PushRow{row("m", fmt.Sprint("p", w), fmt.Sprint("k-", w))})
				var le *mq.LimitError
				if err != nil && !(errors.As(err, &le) && le.Limit == mq.LimitMessages && le.Value == maxMessages) {
					errs <- fmt.Errorf("push: %w", err)
				}
			})
			wg.Go(func() {
				<-start
				_, err := b.s.Push(ctx, []PushRow{row(fmt.Sprint("new-", w), "Default", fmt.Sprint("n-", w))})
				var le *mq.LimitError
				if err != nil && !(errors.As(err, &le) && le.Limit != "") {
					errs <- fmt.Errorf("push to a new queue: %w", err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		msgs := b.texts(`SELECT count(*)::text FROM messages m JOIN partitions p ON p.id = m.partition_id
			JOIN queue_rows q ON q.id = p.queue_id WHERE q.tenant = $1`, name)[0]
		queues := b.texts(`SELECT count(*)::text FROM queue_rows WHERE tenant = $1`, name)[0]
		if msgs != fmt.Sprint(maxMessages) || queues != fmt.Sprint(maxQueues) {
			t.Fatalf("round %d: %s messages and %s queues stored, want exactly %d and %d", round, msgs, queues, maxMessages, maxQueues)
		}
	}
}

// A push that sees every tenant (an internal caller) and the default tenant are never limited,
// and a replay of spooled pushes (every item uncapped) is not checked against the limit.
func TestTenantLimitsSpareTheDefaultTenantAndReplays(t *testing.T) {
	b := setup(t)
	ctx := tenant.With(b.ctx, "replayed")
	if err := b.s.SetTenantLimits(b.ctx, "replayed", mq.TenantLimits{MaxMessages: ptr(int64(1))}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Push(ctx, []PushRow{row("q", "Default", "a"), row("q", "Default", "b")}); err == nil {
		t.Fatal("a push of 2 past a limit of 1 was taken")
	}
	r1, r2 := row("q", "Default", "a"), row("q", "Default", "b")
	r1.Uncapped, r2.Uncapped = true, true
	if _, err := b.s.Push(ctx, []PushRow{r1, r2}); err != nil {
		t.Fatalf("a replay past the limit: %v", err)
	}
	if _, err := b.s.Push(tenant.With(b.ctx, tenant.Default), []PushRow{row("q", "Default", "c")}); err != nil {
		t.Fatalf("the default tenant: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
