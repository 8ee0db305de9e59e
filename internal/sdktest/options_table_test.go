package sdktest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/mq"
)

// The SDK sets every queue option of the broker's table, under the table's keys: a new row in
// mq.OptionTable without an SDK option function fails here.
func TestSDKOptionsCoverTheOptionTable(t *testing.T) {
	var sent map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Options map[string]any `json:"options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		sent = body.Options
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"configured":true,"queue":"q","options":{}}`))
	}))
	defer srv.Close()
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Queue("q").Create(testCtx(t),
		queen.LeaseTime(time.Second), queen.RetryLimit(1), queen.RetryDelay(time.Millisecond),
		queen.Priority(1), queen.MaxSize(1), queen.TTL(time.Second), queen.DeadLetterQueue(true),
		queen.DLQAfterMaxRetries(true), queen.DelayedProcessing(time.Second), queen.WindowBuffer(time.Second),
		queen.Retention(time.Second), queen.CompletedRetention(time.Second), queen.RetentionEnabled(true),
		queen.EncryptionEnabled(true), queen.MaxWaitTime(time.Second), queen.DedupWindow(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for k := range sent {
		got = append(got, k)
	}
	for _, o := range mq.OptionTable {
		want = append(want, o.Key)
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("SDK sends %v\ntable has %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("SDK sends %v\ntable has %v", got, want)
		}
	}
}
