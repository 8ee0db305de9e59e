package sdktest

import (
	"slices"
	"sort"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// The SDK sets every queue option of the broker's table, under the table's keys: a new row in
// mq.OptionTable without an SDK option function fails here.
func TestSDKOptionsCoverTheOptionTable(t *testing.T) {
	url, sent := testkit.ConfigureRecorder(t)
	c, err := queen.New(url)
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
	if got, want := sent(), tableKeys(); !slices.Equal(got, want) {
		t.Fatalf("SDK sends %v\ntable has %v", got, want)
	}
}

// tableKeys are mq.OptionTable's keys, sorted.
func tableKeys() []string {
	var keys []string
	for _, o := range mq.OptionTable {
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys
}
