package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchAckItem is one acknowledgment as a client sends it after a pop.
func benchAckItem(i int) string {
	return fmt.Sprintf(`{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed"}`,
		benchUUID(i), benchUUID(7), benchUUID(1<<20))
}

// benchAckBatchBody acknowledges the 100 messages of a full default pop.
func benchAckBatchBody() []byte {
	acks := make([]string, 100)
	for i := range acks {
		acks[i] = benchAckItem(i)
	}
	return []byte(`{"consumerGroup":"billing","acknowledgments":[` + strings.Join(acks, ",") + `]}`)
}

// BenchmarkAckBatchDecode compares the one-pass reader the handler tries first with the
// exact path it falls back to.
func BenchmarkAckBatchDecode(b *testing.B) {
	b.Run("fast", func(b *testing.B) { benchFast(b, benchAckBatchBody(), parseAckBatchFast) })
	b.Run("exact", func(b *testing.B) {
		benchDecode(b, benchAckBatchBody(), func(body json.RawMessage) string {
			_, msg := parseAckBatch(body)
			return msg
		})
	})
}
