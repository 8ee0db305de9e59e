package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkTransactionDecode decodes the typical pipeline step: ack the consumed message
// and push its successor, atomically.
func BenchmarkTransactionDecode(b *testing.B) {
	body := fmt.Sprintf(`{"operations":[`+
		`{"type":"ack","transactionId":%q,"partitionId":%q,"consumerGroup":"billing","status":"completed"},`+
		`{"type":"push","items":[{"queue":"invoices","partition":"customer-7","payload":%s}]}`+
		`],"requiredLeases":[%q]}`,
		benchUUID(1), benchUUID(7), benchPayload(1), benchUUID(1<<20))
	benchDecode(b, []byte(body), func(body json.RawMessage) string {
		_, _, msg := parseTransaction(body)
		return msg
	})
}
