package httpapi

import (
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// benchPopResult is a pop of n messages from one partition, as the store returns them.
func benchPopResult(n int) mq.PopResult {
	created := time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)
	res := mq.PopResult{LeaseID: benchUUID(1 << 20), Group: "billing", Claimed: 1, Messages: make([]mq.Message, n)}
	for i := range res.Messages {
		res.Messages[i] = mq.Message{ID: benchUUID(i), TransactionID: benchUUID(i + n), Payload: []byte(benchPayload(i)),
			CreatedAt: created.Add(time.Duration(i) * time.Microsecond), PartitionID: benchUUID(7),
			Partition: "customer-7", Queue: "orders"}
	}
	return res
}

// BenchmarkPopEncode measures the pop answer as written (writePop) against encoding/json
// writing the same answer from structs (the reference of TestPopEncodingMatchesEncodingJSON).
func BenchmarkPopEncode(b *testing.B) {
	for _, n := range benchSizes {
		res := benchPopResult(n)
		b.Run("messages="+strconv.Itoa(n), func(b *testing.B) {
			w := newDiscardWriter()
			b.ReportAllocs()
			for b.Loop() {
				writePop(w, res)
			}
		})
		b.Run("encoding-json/messages="+strconv.Itoa(n), func(b *testing.B) {
			benchEncode(b, func() any { return popReference(res) })
		})
	}
}
