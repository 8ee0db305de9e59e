package httpapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// benchPushBody is a push request of n items shaped like a client library's: queue,
// partition, a client-made transactionId and a ~100-byte object payload.
func benchPushBody(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"queue":"orders","partition":"customer-%d","transactionId":%q,"payload":%s}`,
			i%10, benchUUID(i), benchPayload(i))
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// BenchmarkPushDecode compares the one-pass push reader the handler tries first with the
// exact path it falls back to.
func BenchmarkPushDecode(b *testing.B) {
	for _, n := range benchSizes {
		body := benchPushBody(n)
		b.Run("items="+strconv.Itoa(n)+"/fast", func(b *testing.B) { benchFast(b, body, parsePushFast) })
		b.Run("items="+strconv.Itoa(n)+"/exact", func(b *testing.B) {
			benchDecode(b, body, func(body json.RawMessage) string {
				_, msg := parsePushItems(body)
				return msg
			})
		})
	}
}

// BenchmarkPushEncode compares the hand-written push answer with encoding/json of the answer
// struct it replaced (the same bytes: TestPushEncodingMatchesEncodingJSON).
func BenchmarkPushEncode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			items, msg := parsePushItems(benchPushBody(n))
			if msg != "" {
				b.Fatal(msg)
			}
			res := make([]mq.PushResult, n)
			for i := range res {
				res[i] = mq.PushResult{TransactionID: items[i].TransactionID,
					Status: mq.StatusQueued, MessageID: benchUUID(i + n), PartitionID: benchUUID(i % 10)}
			}
			b.Run("json", func(b *testing.B) { benchEncode(b, func() any { return pushReference(items, res) }) })
			b.Run("hand", func(b *testing.B) {
				w := newDiscardWriter()
				b.ReportAllocs()
				for b.Loop() {
					writePush(w, items, res)
				}
			})
		})
	}
}
