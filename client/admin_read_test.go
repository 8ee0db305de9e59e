package queen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The read-side calls send the broker's parameters and decode its answers as documented in
// docs/api/admin-api.md; the end-to-end tests are in internal/sdktest.
func TestAdminReadDecoding(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/consumer-groups/g%2F1", "/api/v1/consumer-groups/g/1":
			_, _ = w.Write([]byte(`{"zeta":{"partitions":[{"partition":"p","offsetLag":2,"lastConsumedAt":null}]},
				"alpha":{"partitions":[{"partition":"a","workerId":null,"lastConsumedAt":"2026-04-26T10:00:00.000Z"}]}}`))
		case "/api/v1/consumer-groups/lagging":
			_, _ = w.Write([]byte(`[{"consumer_group":"g","queue_name":"q","offset_lag":3,"worker_id":null}]`))
		case "/api/v1/messages/pid/tx":
			_, _ = w.Write([]byte(`{"success":false,"message":"Message not found"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ps, err := c.ConsumerGroupDetail(ctx, "g/1")
	if err != nil || len(ps) != 2 || ps[0].Queue != "alpha" || ps[1].Queue != "zeta" || ps[1].OffsetLag != 2 ||
		!ps[1].LastConsumedAt.IsZero() || ps[0].LastConsumedAt.Year() != 2026 {
		t.Fatalf("ConsumerGroupDetail: %v %+v", err, ps)
	}
	lag, err := c.LaggingGroups(ctx, 90*time.Minute)
	if err != nil || len(lag) != 1 || lag[0].OffsetLag != 3 || lag[0].Queue != "q" {
		t.Fatalf("LaggingGroups: %v %+v", err, lag)
	}
	found, err := c.DeleteMessage(ctx, "pid", "tx")
	if err != nil || found {
		t.Fatalf("DeleteMessage: %v %v", err, found)
	}
	want := []string{"GET /api/v1/consumer-groups/g%2F1", "GET /api/v1/consumer-groups/lagging?minLagSeconds=5400",
		"DELETE /api/v1/messages/pid/tx"}
	for i, w := range want {
		if i >= len(got) || got[i] != w {
			t.Fatalf("requests %q, want %q", got, want)
		}
	}
}
