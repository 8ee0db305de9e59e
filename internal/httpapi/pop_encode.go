package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/queen-go/queen/internal/broker"
)

// writePop answers 200 with the messages of a pop (data-api.md §3.1); the top-level queue and
// partition are the first message's. The answer is written by hand rather than through
// encoding/json: that validated and compacted every payload again, and with the reflection
// around it cost about a third of the broker's CPU on pops of 100 messages. Payloads are JSON
// the database already validated; they are copied as they are when already compact. The
// output is byte for byte what encoding/json wrote (TestPopEncodingMatchesEncodingJSON).
func writePop(w http.ResponseWriter, res broker.PopResult) {
	p := popBufs.Get().(*[]byte)
	out := appendPop((*p)[:0], res)
	writeBody(w, http.StatusOK, out)
	if cap(out) <= maxPooledBuf {
		*p = out
		popBufs.Put(p)
	}
}

// popBufs recycles the answer buffers of writePop (see encodeBufs).
var popBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendPop appends the JSON answer of a pop that delivered at least one message.
func appendPop(b []byte, res broker.PopResult) []byte {
	first := res.Messages[0]
	b = append(b, `{"success":true,"queue":`...)
	b = appendString(b, first.Queue)
	b = append(b, `,"partition":`...)
	b = appendString(b, first.Partition)
	b = append(b, `,"partitionId":`...)
	b = appendString(b, first.PartitionID)
	b = append(b, `,"leaseId":`...)
	b = appendString(b, res.LeaseID)
	b = append(b, `,"consumerGroup":`...)
	b = appendString(b, res.Group)
	b = append(b, `,"partitionsClaimed":`...)
	b = strconv.AppendInt(b, int64(res.Claimed), 10)
	b = append(b, `,"messages":[`...)
	for i, m := range res.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, m.ID)
		b = append(b, `,"transactionId":`...)
		b = appendString(b, m.TransactionID)
		b = append(b, `,"traceId":`...)
		b = appendNullString(b, m.TraceID)
		b = append(b, `,"data":`...)
		b = appendRaw(b, m.Payload)
		b = append(b, `,"producerSub":`...)
		b = appendNullString(b, m.ProducerSub)
		b = append(b, `,"createdAt":"`...)
		b = m.CreatedAt.UTC().AppendFormat(b, microLayout)
		b = append(b, `","partitionId":`...)
		b = appendString(b, m.PartitionID)
		b = append(b, `,"partition":`...)
		b = appendString(b, m.Partition)
		b = append(b, `,"queue":`...)
		b = appendString(b, m.Queue)
		b = append(b, `,"leaseId":`...)
		b = appendString(b, res.LeaseID)
		b = append(b, `,"consumerGroup":`...)
		b = appendString(b, res.Group)
		b = append(b, `,"retryCount":`...)
		b = strconv.AppendInt(b, int64(m.RetryCount), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendNullString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString appends s as a JSON string. Plain printable ASCII, nearly every name and key,
// is copied; anything else goes through encoding/json (HTML left unescaped, as writeJSON).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendEncoded(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendRaw appends a stored JSON payload compacted, as encoding/json writes a RawMessage.
func appendRaw(b []byte, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	if bytes.IndexAny(raw, " \t\r\n") < 0 {
		return append(b, raw...)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		// Cannot happen for what the database validated; keep the answer valid JSON regardless.
		return appendEncoded(b, string(raw))
	}
	return append(b, out.Bytes()...)
}

// appendEncoded appends v as encoding/json writes it with HTML escaping off.
func appendEncoded(b []byte, v any) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(b, "null"...)
	}
	return append(b, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...)
}
