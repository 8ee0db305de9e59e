package sdktest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	h, err := newClient(t).Health(testCtx(t))
	if err != nil || !h.Healthy() || h.Database != "connected" || h.Server != "queen-go" {
		t.Fatalf("health: %v %+v", err, h)
	}
	// An unhealthy broker answers 503 with the body; it is returned with the error.
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"unhealthy","database":"disconnected"}`))
	}))
	defer sick.Close()
	c, _ := queen.New(sick.URL)
	h, err = c.Health(testCtx(t))
	var he *queen.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 || h.Healthy() || h.Database != "disconnected" {
		t.Fatalf("sick health: %v %+v", err, h)
	}
}

func TestSeek(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q, numbered(3)...)
	res, err := q.Seek(ctx, "readers", queen.SeekEnd)
	skipIfUnsupported(t, err, "POST /api/v1/consumer-groups/:group/queues/:queue/seek")
	if err != nil || res.ConsumerGroup != "readers" || res.Queue != q.Name() || res.PartitionsUpdated != 1 {
		t.Fatalf("seek to end: %v %+v", err, res)
	}
	if b, _ := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "readers"}); !b.Empty() {
		t.Fatalf("after seek to end: %+v", b.Messages)
	}
	if _, err := q.Seek(ctx, "readers", queen.SeekTime(time.Now().Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if b, _ := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "readers", Batch: 10, Wait: wait}); len(b.Messages) != 3 {
		t.Fatalf("after seek back: %+v", b.Messages)
	}
	if _, err := q.Partition("Default").Seek(ctx, "readers", queen.SeekEnd); err != nil {
		t.Fatalf("partition seek: %v", err)
	}
	if _, err := q.Partition("Default").Seek(ctx, "readers", queen.SeekTime(time.Now())); err == nil {
		t.Fatal("partition seek to a time accepted")
	}
	if _, err := c.Queue("nope-"+queueName(t)).Seek(ctx, "readers", queen.SeekEnd); !errors.Is(err, queen.ErrNotFound) ||
		errors.Is(err, queen.ErrUnsupported) {
		t.Fatalf("seek of a missing queue: %v", err)
	}
}

func TestDeleteConsumerGroup(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := testCtx(t)
	q := createQueue(t, c)
	mustPush(t, q, numbered(2)...)
	if b, _ := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "g", AutoAck: true, Wait: wait}); len(b.Messages) != 1 {
		t.Fatal("group pop")
	}
	err := q.DeleteConsumerGroup(ctx, "g")
	skipIfUnsupported(t, err, "DELETE /api/v1/consumer-groups/:group/queues/:queue")
	if err != nil {
		t.Fatal(err)
	}
	// A deleted group starts over.
	if b, _ := q.Pop(ctx, queen.PopOptions{ConsumerGroup: "g", Batch: 10, Wait: wait}); len(b.Messages) != 2 {
		t.Fatalf("after delete: %+v", b.Messages)
	}
}
