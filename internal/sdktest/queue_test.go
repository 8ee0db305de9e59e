package sdktest

import (
	"errors"
	"slices"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

func TestCreateSetsEveryOption(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t))
	cfg, err := q.Create(testCtx(t),
		queen.Namespace("billing"), queen.Task("invoice"),
		queen.LeaseTime(90*time.Second), queen.RetryLimit(0), queen.RetryDelay(250*time.Millisecond),
		queen.Priority(7), queen.MaxSize(1000), queen.TTL(2*time.Hour), queen.DeadLetterQueue(true),
		queen.DLQAfterMaxRetries(true), queen.DelayedProcessing(1500*time.Millisecond), queen.WindowBuffer(3*time.Second),
		queen.Retention(time.Hour), queen.CompletedRetention(time.Minute), queen.RetentionEnabled(true),
		queen.EncryptionEnabled(true), queen.MaxWaitTime(10*time.Minute), queen.DedupWindow(0))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := queen.QueueConfig{
		Queue: q.Name(), QueueID: cfg.QueueID, PartitionID: cfg.PartitionID, Namespace: "billing", Task: "invoice",
		LeaseTime: 90 * time.Second, RetryLimit: 0, RetryDelay: 250 * time.Millisecond, Priority: 7, MaxSize: 1000,
		TTL: 2 * time.Hour, DeadLetterQueue: true, DLQAfterMaxRetries: true,
		DelayedProcessing: 2 * time.Second, // whole seconds, rounded up
		WindowBuffer:      3 * time.Second, Retention: time.Hour, CompletedRetention: time.Minute,
		RetentionEnabled: true, EncryptionEnabled: true, MaxWaitTime: 10 * time.Minute, DedupWindow: 0,
	}
	if cfg != want {
		t.Fatalf("config\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.QueueID == "" || cfg.PartitionID == "" {
		t.Fatalf("ids missing: %+v", cfg)
	}
}

func TestConfigureReplacesAndOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c, queen.LeaseTime(10*time.Second), queen.Priority(3), queen.Namespace("ns1"))
	// Configure replaces the whole set: what is not given returns to its default.
	cfg, err := q.Configure(ctx, queen.Priority(4))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Priority != 4 || cfg.LeaseTime != 300*time.Second || cfg.RetryLimit != 3 ||
		cfg.RetryDelay != time.Second || cfg.DedupWindow != 900*time.Second || cfg.Namespace == "ns1" {
		t.Fatalf("after Configure: %+v", cfg)
	}
	// Read-modify-write keeps the rest.
	again, err := q.Configure(ctx, append(cfg.Options(), queen.RetryLimit(9))...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RetryLimit = 9
	if again != cfg {
		t.Fatalf("round trip\n got %+v\nwant %+v", again, cfg)
	}
}

func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q, "x")
	existed, err := q.Delete(ctx)
	skipIfUnsupported(t, err, "DELETE /api/v1/resources/queues/:queue")
	if err != nil || !existed {
		t.Fatalf("Delete: existed=%v err=%v", existed, err)
	}
	if b, err := q.Pop(ctx, queen.PopOptions{}); err != nil || !b.Empty() {
		t.Fatalf("pop after delete: %v %+v", err, b)
	}
	existed, err = q.Delete(ctx)
	if err != nil || existed {
		t.Fatalf("second Delete: existed=%v err=%v (deletion is idempotent)", existed, err)
	}
}

func TestListQueues(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := createQueue(t, c, queen.Namespace("listing"))
	mustPush(t, q.Partition("a"), "x")
	qs, err := c.Queues(testCtx(t))
	skipIfUnsupported(t, err, "GET /api/v1/resources/queues")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(qs, func(qi queen.QueueInfo) bool { return qi.Name == q.Name() })
	if i < 0 {
		t.Fatalf("queue %s not listed in %d queues", q.Name(), len(qs))
	}
	if qs[i].Namespace != "listing" || qs[i].ID == "" || qs[i].CreatedAt.IsZero() || qs[i].Partitions < 1 {
		t.Fatalf("listed as %+v", qs[i])
	}
}

func TestQueueNamesAreEscaped(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	q := c.Queue(queueName(t) + "/with slash?&%").Partition("p/1 #2")
	mustPush(t, q, "odd")
	b, err := q.Pop(testCtx(t), queen.PopOptions{Wait: wait})
	if err != nil || len(b.Messages) != 1 || b.Messages[0].Queue != q.Name() || b.Messages[0].Partition != "p/1 #2" {
		t.Fatalf("pop: %v %+v", err, b)
	}
	if _, err := q.Delete(testCtx(t)); err != nil && !errors.Is(err, queen.ErrUnsupported) {
		t.Fatal(err)
	}
}
