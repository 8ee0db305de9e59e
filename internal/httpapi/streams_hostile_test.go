package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// Hostile bodies on the streams routes (docs/api/streams.md §2: a deterministic failure is never
// a 5xx, since the SDKs retry those): every one is answered 2xx or 4xx.
func TestStreamsHostileInputs(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	q, p := s.queryID, s.pop.PartitionID
	nul := `a\u0000b`
	cyc := func(extra string) string {
		return `{"query_id":"` + q + `","partition_id":"` + p + `"` + extra + `}`
	}
	huge := strings.Repeat("k", 4000)
	runHostile(t, b, []hostileCase{
		{"register body not UTF-8", "POST", "/streams/v1/queries", "{\"name\":\"a\xffb\",\"source_queue\":\"s\",\"config_hash\":\"h\"}", 400, hostileUTF8Body},
		{"register NUL name", "POST", "/streams/v1/queries", `{"name":"` + nul + `","source_queue":"s","config_hash":"h"}`, 400, hostileErr("name is required")},
		{"register at the limit", "POST", "/streams/v1/queries", `{"name":"` + hostileMax + `","source_queue":"` + hostileMax + `","config_hash":"` + hostileMax + `","sink_queue":"` + hostileMax + `"}`, 200, ""},
		{"register over the limit", "POST", "/streams/v1/queries", `{"name":"` + hostileLong + `","source_queue":"s","config_hash":"h"}`, 400, hostileErr("name exceeds 255 characters")},
		{"cycle empty body", "POST", "/streams/v1/cycle", "", 400, hostileErr("Empty request body")},
		{"cycle NUL group", "POST", "/streams/v1/cycle", cyc(`,"consumer_group":"` + nul + `"`), 400, hostileErr("consumer_group must be a string")},
		{"cycle NUL key", "POST", "/streams/v1/cycle", cyc(`,"state_ops":[{"type":"upsert","key":"` + nul + `"}]`), 400, hostileErr("state_op key must be a string")},
		{"cycle NUL in a value", "POST", "/streams/v1/cycle", cyc(`,"state_ops":[{"type":"upsert","key":"v","value":"` + nul + `"}]`), 200, ""},
		{"cycle NUL ack key", "POST", "/streams/v1/cycle", cyc(`,"ack":{"transactionId":"` + nul + `"}`), 400, hostileErr("ack.transactionId is required")},
		{"cycle huge key", "POST", "/streams/v1/cycle", cyc(`,"state_ops":[{"type":"upsert","key":"` + huge + `"}]`), 200, ""},
		{"cycle uppercase ids", "POST", "/streams/v1/cycle", `{"query_id":"` + strings.ToUpper(q) + `","partition_id":"` + strings.ToUpper(p) + `"}`, 200, ""},
		{"cycle braces id", "POST", "/streams/v1/cycle", `{"query_id":"{` + q + `}","partition_id":"` + p + `"}`, 400, hostileErr("query_id must be a UUID")},
		{"cycle long ack key", "POST", "/streams/v1/cycle", cyc(`,"ack":{"transactionId":"` + huge + `"}`), 200, ""},
		{"cycle state_ops object", "POST", "/streams/v1/cycle", cyc(`,"state_ops":{"type":"upsert"}`), 400, hostileErr("state_ops must be an array")},
		{"cycle count huge", "POST", "/streams/v1/cycle", cyc(`,"ack":{"transactionId":"m1","count":1e400}`), 400, ""},
		{"state NUL prefix", "POST", "/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":"` + p + `","key_prefix":"` + nul + `"}`, 400, hostileErr("key_prefix must be a string")},
		{"state NUL key", "POST", "/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":"` + p + `","keys":["` + nul + `"]}`, 400, hostileErr("keys must be an array of strings")},
		{"state huge ripe", "POST", "/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":"` + p + `","ripe_at_or_before":1e300}`, 200, ""},
		{"state huge key", "POST", "/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":"` + p + `","keys":["` + huge + `"],"key_prefix":"` + huge + `"}`, 200, ""},
		{"delete NUL name", "DELETE", "/streams/v1/queries/a%00b", nil, 200, ""},
		{"delete name not UTF-8", "DELETE", "/streams/v1/queries/%FF", nil, 400, hostileUTF8Req},
	})
	// A very long key: stored, or refused by the index as a rollback; never a 5xx.
	code, body := b.do("POST", "/streams/v1/cycle", obj{"query_id": q, "partition_id": p,
		"state_ops": []obj{{"type": "upsert", "key": strings.Repeat("é", 8000)}}})
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	t.Logf("a state key of 16,000 bytes: %s", body)
}
