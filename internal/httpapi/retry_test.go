package httpapi_test

// The rules of acknowledgement evaluation, retries and the DLQ (docs/api/concepts.md §8.2, §9) are
// tested where the SQL decides them: internal/store/ack_test.go. What stays here is the wire:
// the fields of an ack answer, the status and leaseId values a client may send, the texts.

import (
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// semRejected requires an ack result rejected with msg.
func semRejected(t *testing.T, r acked, msg string) {
	t.Helper()
	if r.Success || semStr(r.Error) != msg || r.DLQ || r.AlreadyCommitted {
		t.Fatalf("ack %+v (%s), want rejected with %q", r, semStr(r.Error), msg)
	}
}

// An ack answer names the queue and partition; "success" means completed and an unknown status
// means failed; a leaseId that is no UUID is a lease nobody holds; "" is no lease; an ack
// without a consumerGroup is queue mode's.
func TestAckAnswerFieldsAndStatusValues(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.semConfigure(b.queue, obj{"options": obj{"retryLimit": 0}})
	b.semPushKeys("pA", "a1", "a2", "a3")
	p := b.semMustPop(b.semQ("batch=3"), "a1", "a2", "a3")
	bad := semAckOf(p, 0, "completed")
	bad["leaseId"] = "not-a-uuid"
	semRejected(t, b.ack(bad), "Invalid or expired lease")
	if r := b.semMustAck(semAckOf(p, 0, "success")); r.LeaseReleased || r.DLQ || r.AlreadyCommitted ||
		semStr(r.QueueName) != b.queue || semStr(r.PartitionName) != "pA" {
		t.Fatalf("ack a1 %+v", r)
	}
	if res := b.semAckBatch(semAckOf(p, 1, "bogus-status")); !res[0].DLQ { // failed, no retries left
		t.Fatalf("unknown status %+v", res[0])
	}
	if r := b.semMustAck(obj{"transactionId": "a3", "partitionId": p.PartitionID, "leaseId": ""}); !r.LeaseReleased {
		t.Fatalf("lease-less ack in queue mode %+v", r)
	}
	semRejected(t, b.ack(obj{"transactionId": "nope", "partitionId": p.PartitionID}), "Message not found")
}
