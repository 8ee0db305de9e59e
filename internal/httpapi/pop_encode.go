package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/queen-go/queen/internal/mq"
)

// writePop answers 200 with the messages of a pop (docs/api/data-api.md §3.1); the top-level queue and
// partition are the first message's. The answer is written by hand rather than through
// encoding/json: that validated and compacted every payload again, and with the reflection
// around it cost about a third of the broker's CPU on pops of 100 messages. Payloads are JSON
// the database already validated; they are copied as they are when already compact. The
// output is byte for byte what encoding/json wrote (TestPopEncodingMatchesEncodingJSON).
func writePop(w http.ResponseWriter, res mq.PopResult) {
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
func appendPop(b []byte, res mq.PopResult) []byte {
	first := res.Messages[0]
	b = appendField(b, `{"success":true,"queue":`, first.Queue)
	b = appendField(b, `,"partition":`, first.Partition)
	b = appendField(b, `,"partitionId":`, first.PartitionID)
	b = appendField(b, `,"leaseId":`, res.LeaseID)
	b = appendField(b, `,"consumerGroup":`, res.Group)
	b = strconv.AppendInt(append(b, `,"partitionsClaimed":`...), int64(res.Claimed), 10)
	b = append(b, `,"messages":[`...)
	for i, m := range res.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendField(b, `{"id":`, m.ID)
		b = appendField(b, `,"transactionId":`, m.TransactionID)
		b = appendNullString(append(b, `,"traceId":`...), m.TraceID)
		b = appendRaw(append(b, `,"data":`...), m.Payload)
		b = appendNullString(append(b, `,"producerSub":`...), m.ProducerSub)
		b = m.CreatedAt.UTC().AppendFormat(append(b, `,"createdAt":"`...), microLayout)
		b = appendField(b, `","partitionId":`, m.PartitionID)
		b = appendField(b, `,"partition":`, m.Partition)
		b = appendField(b, `,"queue":`, m.Queue)
		b = appendField(b, `,"leaseId":`, res.LeaseID)
		b = appendField(b, `,"consumerGroup":`, res.Group)
		b = strconv.AppendInt(append(b, `,"retryCount":`...), int64(m.RetryCount), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendField appends the literal prefix (punctuation and a member name) and s as a JSON string.
func appendField(b []byte, prefix, s string) []byte {
	return appendString(append(b, prefix...), s)
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
	if !bytes.ContainsAny(raw, " \t\r\n") {
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
