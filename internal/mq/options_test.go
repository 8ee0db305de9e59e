package mq

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The table and the struct must describe the same options: every field has exactly one row,
// with the field's JSON key, and the accessor returns that field.
func TestOptionTableCoversQueueOptions(t *testing.T) {
	typ := reflect.TypeOf(QueueOptions{})
	if typ.NumField() != len(OptionTable) {
		t.Fatalf("QueueOptions has %d fields, OptionTable %d rows", typ.NumField(), len(OptionTable))
	}
	seen := map[string]bool{}
	for _, o := range OptionTable {
		if seen[o.Key] {
			t.Errorf("%s listed twice", o.Key)
		}
		seen[o.Key] = true
		var q QueueOptions
		// Set the field through the accessor, then find it by its JSON key.
		if o.IsBool() {
			*o.Bool(&q) = true
		} else {
			*o.Int(&q) = 7
		}
		b, _ := json.Marshal(q)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		want := any(float64(7))
		if o.IsBool() {
			want = true
		}
		if m[o.Key] != want {
			t.Errorf("%s: accessor does not set the field with that JSON key (%v)", o.Key, m[o.Key])
		}
		if o.Column == "" || o.Doc == "" {
			t.Errorf("%s: column and doc are required", o.Key)
		}
	}
}

func TestDefaultQueueOptionsAreTheReferenceDefaults(t *testing.T) {
	want := QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600, DedupWindowSeconds: 900}
	if got := DefaultQueueOptions(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
