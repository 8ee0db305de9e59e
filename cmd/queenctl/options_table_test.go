package main

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// `queues create` has a flag for every queue option of the broker's table, and the flags
// together send exactly the table's keys: a new row in mq.OptionTable without a flag fails here.
func TestQueueOptionFlagsCoverTheOptionTable(t *testing.T) {
	url, sent := testkit.ConfigureRecorder(t)
	args := []string{"--server", url, "queues", "create", "q",
		"--lease-time", "1s", "--retry-limit", "1", "--retry-delay", "1s", "--priority", "1", "--max-size", "1",
		"--ttl", "1s", "--dead-letter-queue", "--dlq-after-max-retries", "--delayed-processing", "1s",
		"--window-buffer", "1s", "--retention", "1s", "--completed-retention", "1s", "--retention-enabled",
		"--encryption-enabled", "--max-wait-time", "1s", "--dedup-window", "1s"}
	var out, errOut bytes.Buffer
	if code := runIO(context.Background(), args, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var want []string
	for _, o := range mq.OptionTable {
		want = append(want, o.Key)
	}
	sort.Strings(want)
	if got := sent(); !slices.Equal(got, want) {
		t.Fatalf("flags send %v\ntable has %v", got, want)
	}
}
