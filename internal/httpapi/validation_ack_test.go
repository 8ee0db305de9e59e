package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

func TestValidationAckErrors(t *testing.T) {
	b := fakeSetup(t)
	pid := uuid.NewString()
	cases := []struct {
		body any
		msg  string
	}{
		{`{}`, "transactionId is required"},
		{`[]`, "transactionId is required"},
		{`"x"`, "transactionId is required"},
		{obj{"partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": nil, "partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": 1, "partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": "k"}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": nil}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": 5}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": obj{}}, "partitionId is required to ensure message uniqueness"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/ack", c.body), http.StatusBadRequest, c.msg)
		})
	}
}

// valNotFound is the exact ack answer for a message in a partition that does not exist. Such
// a pair holds no live lease, so leaseReleased is true (docs/api/concepts.md §8.3).
func valNotFound(index int, tx string) map[string]any {
	return map[string]any{"index": float64(index), "transactionId": tx, "success": false,
		"error": "Message not found", "queueName": nil, "partitionName": nil, "leaseReleased": true,
		"dlq": false, "alreadyCommitted": false}
}

func TestValidationAckUnknownPartition(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("p", obj{"payload": 1, "transactionId": "k"})
	pidReal := res[0].PartitionID
	for _, pid := range []string{"not-a-uuid", "", uuid.NewString(), "{" + pidReal + "}", "urn:uuid:" + pidReal,
		strings.ReplaceAll(pidReal, "-", ""), pidReal + "0"} {
		t.Run(pid, func(t *testing.T) {
			r := b.valDo("POST", "/api/v1/ack", obj{"transactionId": "k", "partitionId": pid, "status": "completed"})
			if r.code != http.StatusOK {
				t.Fatalf("ack: %d %s", r.code, r.body)
			}
			got := decode[[]map[string]any](t, r.body)
			if len(got) != 1 || !valEqualJSON(got[0], valNotFound(0, "k")) {
				t.Fatalf("ack answer %s", r.body)
			}
		})
	}
	// None of them touched the message.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationAckGroupDefault(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("a", obj{"payload": 1, "transactionId": "k1"})
	b.push("b", obj{"payload": 2, "transactionId": "k2"})
	// An empty or non-string consumerGroup on /ack means __QUEUE_MODE__.
	for _, c := range []struct{ partition, key string }{{"a", "k1"}, {"b", "k2"}} {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/" + c.partition)
		if !ok {
			t.Fatalf("nothing popped from %s", c.partition)
		}
		group := any("")
		if c.partition == "b" {
			group = 5
		}
		a := b.ack(obj{"transactionId": c.key, "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})
		if !a.Success || !a.LeaseReleased || a.AlreadyCommitted || a.PartitionName == nil || *a.PartitionName != c.partition {
			t.Fatalf("ack with consumerGroup %v: %+v", group, a)
		}
	}
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
}

func TestValidationAckBatchErrors(t *testing.T) {
	b := fakeSetup(t)
	pid := uuid.NewString()
	const noTx = "Each acknowledgment must have a valid transactionId string"
	const noPid = "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
	good := obj{"transactionId": "k", "partitionId": pid}
	acks := func(a ...any) obj { return obj{"acknowledgments": a} }
	cases := []struct {
		body any
		msg  string
	}{
		{`{}`, "acknowledgments array is required"},
		{`[]`, "acknowledgments array is required"},
		{`{"acknowledgments":null}`, "acknowledgments array is required"},
		{`{"acknowledgments":{}}`, "acknowledgments array is required"},
		{`{"acknowledgments":"[]"}`, "acknowledgments array is required"},
		{`{"consumerGroup":"g"}`, "acknowledgments array is required"},
		{acks(5), noTx},
		{acks(nil), noTx},
		{acks("k"), noTx},
		{acks(obj{}), noTx},
		{acks(obj{"transactionId": 1, "partitionId": pid}), noTx},
		{acks(obj{"transactionId": "k"}), noPid},
		{acks(obj{"transactionId": "k", "partitionId": nil}), noPid},
		{acks(obj{"transactionId": "k", "partitionId": 1}), noPid},
		{acks(good, obj{"transactionId": "k"}, 5), noPid},
		{acks(good, good, obj{"partitionId": pid}), noTx},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch", c.body), http.StatusBadRequest, c.msg)
		})
	}
}

// The answers of a well-formed batch, on the real data path: an empty batch and pairs that
// match no message.
func TestValidationAckBatchAnswers(t *testing.T) {
	b := setup(t, testserver.Options{})
	pid := uuid.NewString()
	acks := func(a ...any) obj { return obj{"acknowledgments": a} }
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		r := valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch", `{"acknowledgments":[]}`)
		if r.code != http.StatusOK || string(r.body) != "[]" || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("empty batch: %d %q", r.code, r.body)
		}
	})
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		r := valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch",
			acks(obj{"transactionId": "a", "partitionId": "bad"}, obj{"transactionId": "b", "partitionId": pid}))
		got := decode[[]map[string]any](t, r.body)
		if r.code != http.StatusOK || len(got) != 2 || !valEqualJSON(got[0], valNotFound(0, "a")) ||
			!valEqualJSON(got[1], valNotFound(1, "b")) {
			t.Fatalf("batch: %d %s", r.code, r.body)
		}
	})
}

func TestValidationAckBatchNothingAppliedOnError(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1, "transactionId": "k"})
	p, ok := b.pop(valPopPath(b.queue, ""))
	if !ok {
		t.Fatal("nothing popped")
	}
	valid := obj{"transactionId": "k", "partitionId": p.PartitionID, "leaseId": p.LeaseID}
	r := b.valDo("POST", "/api/v1/ack/batch", obj{"acknowledgments": []any{valid, obj{"transactionId": "x"}}})
	valWantError(t, r, http.StatusBadRequest,
		"Each acknowledgment must have a valid partitionId string to ensure message uniqueness")
	// Had the first element been applied, the lease would be released and unknown now.
	if ext := b.valExtend(p.LeaseID, `{"seconds":30}`); ext["success"] != true {
		t.Fatalf("lease gone after a rejected batch: %v", ext)
	}
	if a := b.ack(valid); !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
		t.Fatalf("ack after the rejected batch %+v", a)
	}
}

func TestValidationAckBatchConsumerGroups(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p1", obj{"payload": 1, "transactionId": "k1"})
	b.push("p2", obj{"payload": 2, "transactionId": "k2"})
	b.push("p3", obj{"payload": 3, "transactionId": "k3"})
	part := func(name, group string) popped {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/" + name + "?consumerGroup=" + group)
		if !ok {
			t.Fatalf("nothing popped from %s for %s", name, group)
		}
		return p
	}
	p1, p2, p3 := part("p1", "g1"), part("p2", "g2"), part("p3", "g1")
	r := b.valDo("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g1", "acknowledgments": []obj{
		{"transactionId": "k1", "partitionId": p1.PartitionID, "leaseId": p1.LeaseID, "consumerGroup": ""},
		{"transactionId": "k2", "partitionId": p2.PartitionID, "leaseId": p2.LeaseID, "consumerGroup": "g2"},
		{"transactionId": "k3", "partitionId": p3.PartitionID, "leaseId": p3.LeaseID, "consumerGroup": 7},
	}})
	if r.code != http.StatusOK {
		t.Fatalf("batch: %d %s", r.code, r.body)
	}
	res := decode[[]acked](t, r.body)
	if len(res) != 3 {
		t.Fatalf("batch answer %s", r.body)
	}
	for i, a := range res {
		if !a.Success || a.Index != i || !a.LeaseReleased || a.QueueName == nil || *a.QueueName != b.queue {
			t.Fatalf("element %d: %s", i, r.body)
		}
	}
	// Each group consumed exactly what it acked; g1 still has p2 to read.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/p1?consumerGroup=g1", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/p2?consumerGroup=g2", nil))
	part("p2", "g1")

	// The element's group wins over the top-level one: g2's lease acked as g3 is rejected
	// and g2's batch stays leased.
	p := part("p1", "g2")
	r = b.valDo("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g2", "acknowledgments": []obj{
		{"transactionId": "k1", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": "g3"}}})
	res = decode[[]acked](t, r.body)
	if r.code != http.StatusOK || len(res) != 1 || res[0].Success {
		t.Fatalf("ack under the element's group: %d %s", r.code, r.body)
	}
	if ext := b.valExtend(p.LeaseID, nil); ext["success"] != true {
		t.Fatalf("g2's lease after an ack as g3: %v", ext)
	}
}

// ---------------------------------------------------------------------------------------------
// Lease extension
