package httpapi_test

// Deduplication of transactionIds (docs/api/concepts.md §4.3) is tested where the SQL decides it:
// internal/store/push_test.go. What stays here is the wire of a duplicate in a push answer.

import (
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// A duplicate is answered with its own index, its transactionId and the id of the message
// holding the key.
func TestDedupWithinOneRequest(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("pA", obj{"payload": "first", "transactionId": "k1"}, obj{"payload": "second", "transactionId": "k1"},
		obj{"payload": "other", "transactionId": "k2"}, obj{"payload": "third", "transactionId": "k1"})
	if res[0].Status != "queued" || res[2].Status != "queued" {
		t.Fatalf("push %+v", res)
	}
	for _, i := range []int{1, 3} {
		if r := res[i]; r.Status != "duplicate" || r.MessageID != res[0].MessageID || r.TransactionID != "k1" || r.Index != i {
			t.Fatalf("item %d: %+v, want duplicate of %s", i, r, res[0].MessageID)
		}
	}
	p := b.semMustPop(b.semQ("batch=10"), "k1", "k2")
	if string(p.Messages[0].Data) != `"first"` || p.Messages[0].ID != res[0].MessageID {
		t.Fatalf("the first item must win: %+v", p.Messages[0])
	}
}
