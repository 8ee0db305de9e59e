package httpapi_test

import (
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

func TestPushPopAckRoundTrip(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("", obj{"payload": obj{"n": 1}, "transactionId": "k1"}, obj{"payload": nil})
	if res[0].Status != "queued" || res[0].TransactionID != "k1" || res[1].TransactionID != res[1].MessageID {
		t.Fatalf("push results %+v", res)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10")
	if !ok || len(p.Messages) != 2 || string(p.Messages[0].Data) != `{"n":1}` || string(p.Messages[1].Data) != "null" {
		t.Fatalf("pop %+v", p)
	}
	a := b.ack(obj{"transactionId": "k1", "partitionId": p.PartitionID, "leaseId": p.LeaseID})
	if !a.Success || a.LeaseReleased {
		t.Fatalf("ack %+v", a)
	}
	a = b.ack(obj{"transactionId": p.Messages[1].TransactionID, "partitionId": p.PartitionID, "leaseId": p.LeaseID})
	if !a.Success || !a.LeaseReleased {
		t.Fatalf("ack %+v", a)
	}
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue); ok {
		t.Fatal("consumed messages delivered again")
	}
}
