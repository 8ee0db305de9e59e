package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	queen "github.com/queen-go/queen/client"
	"sigs.k8s.io/yaml"
)

// zeroTime is how encoding/json writes a zero time.Time: what -o json printed where the API
// says null; -o json and -o yaml now write null there too.
const zeroTime = `"0001-01-01T00:00:00Z"`

// TestNullTimesAsTheAPISaysNull: every zero time is null and everything else, field order,
// names, omitempty and omitzero included, is exactly what json.Marshal writes.
func TestNullTimesAsTheAPISaysNull(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 27, 53, 0, time.UTC)
	empty := queen.PartitionInfo{ID: "p", Name: "Default", CreatedAt: at}
	full := queen.PartitionInfo{ID: "q", Name: "p1", CreatedAt: at, OldestMessage: at, NewestMessage: at.Add(time.Second)}
	for _, v := range []any{
		empty,
		&empty,
		[]queen.PartitionInfo{empty, full},
		[]queen.PartitionInfo(nil),
		&queen.QueueDetail{Name: "orders", CreatedAt: at, Partitions: []queen.PartitionInfo{empty},
			Options: map[string]any{"leaseTime": 300, "at": time.Time{}}},
		queen.GroupPartition{Queue: "orders", Partition: "p1"},
		[]queen.StoredMessage{{ID: "m", CreatedAt: at}},
		queen.LeaseResult{LeaseID: "l", Status: queen.LeaseStatus(0)},
		queen.ConsumerGroup{Name: "g", State: "Dead"},
		map[string]any{"a": []any{time.Time{}, at}, "n": nil},
		struct {
			queen.PartitionInfo
			hidden time.Time
			When   *time.Time `json:"when,omitempty"`
			Times  [2]time.Time
		}{PartitionInfo: empty, hidden: at, Times: [2]time.Time{at, {}}},
	} {
		before, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(nullTimes(v))
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		want := strings.ReplaceAll(string(before), ":"+zeroTime, ":null")
		want = strings.ReplaceAll(want, "["+zeroTime, "[null")
		want = strings.ReplaceAll(want, ","+zeroTime, ",null")
		if string(got) != want {
			t.Errorf("%T:\n got %s\nwant %s", v, got, want)
		}
	}

	// A payload is the user's: its own "0001-…" string is printed as sent.
	m := &queen.Message{ID: "m", Data: json.RawMessage(`{"at":` + zeroTime + `}`), CreatedAt: at}
	if got, _ := json.Marshal(nullTimes(m)); !strings.Contains(string(got), `"data":{"at":`+zeroTime+`}`) {
		t.Errorf("payload changed: %s", got)
	}

	// A value without time.Time is printed from the value itself, not a copy.
	if got := nullTimes(queen.Counters{Total: 3}); got != (queen.Counters{Total: 3}) {
		t.Errorf("Counters: %#v", got)
	}
	if nullTimes(nil) != nil {
		t.Error("nil")
	}

	// YAML is made from the JSON: null there too.
	b, err := yaml.Marshal(nullTimes(empty))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "oldestMessage: null\n") || strings.Contains(string(b), "0001-01-01") {
		t.Errorf("yaml:\n%s", b)
	}
}
