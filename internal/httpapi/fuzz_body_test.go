package httpapi_test

// Fuzz targets for body decoding (docs/api/README.md §2.4, §2.9): whatever body a client sends to push,
// ack, ack batch, transaction or configure, the broker answers it without a 5xx. The seeds,
// which run as ordinary tests, are the inputs and their kin; testdata/fuzz holds the
// inputs earlier fuzzing runs found interesting.

import (
	"strings"
	"testing"
)

// fuzzBodySeeds are bodies every body target starts from, whatever its route.
var fuzzBodySeeds = []string{
	"", " ", "null", "[]", "{}", "\xff", "{\"a\":\"\xff\"}", `{"a":"\u0000"}`, `{"a":"\ud800"}`,
	`{"a":1e999}`, `{"a":-0}`, `{"a":9223372036854775808}`, `{"a":[[[[[[[[[[]]]]]]]]]]}`,
}

// fuzzBody runs one body target: POST to path with the seeds plus the route's own.
func fuzzBody(f *testing.F, path string, seeds ...string) {
	srv := fuzzBroker(f)
	for _, s := range append(seeds, fuzzBodySeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzSend(t, srv, "POST", path, body)
	})
}

func FuzzPushBody(f *testing.F) {
	fuzzBody(f, "/api/v1/push",
		`{"items":[{"queue":"fz","payload":{"a":1}}]}`,
		"{\"items\":[{\"queue\":\"fz\",\"payload\":\"a\xffb\"}]}",
		`{"items":[{"queue":"fz","payload":"a\u0000b\ud800"}]}`,
		`{"items":[{"queue":"fz","partition":"p\u0000","payload":1}]}`,
		`{"items":[{"queue":"`+strings.Repeat("q", 256)+`","payload":1}]}`,
		`{"items":[{"queue":"fz","transactionId":"`+strings.Repeat("é", 256)+`","payload":1}]}`,
		`{"items":[{"queue":"fz","payload":null},{"queue":"fz"}]}`,
		`{"items":[{"queue":"","payload":1}]}`,
		`{"items":{"queue":"fz"}}`,
		`{"ITEMS":[{"QUEUE":"fz","Payload":1}]}`,
		`{"items":[{"queue":"fz","payload":1,"queue":"fz2"}]}`,
	)
}

func FuzzAckBody(f *testing.F) {
	fuzzBody(f, "/api/v1/ack",
		`{"transactionId":"t","partitionId":"00000000-0000-7000-8000-000000000000","status":"failed","error":"x"}`,
		`{"transactionId":"t","partitionId":"nope","consumerGroup":"g\u0000","leaseId":"l"}`,
		`{"transactionId":"`+strings.Repeat("t", 256)+`","partitionId":"p"}`,
		`{"transactionId":"t","partitionId":"p","error":"`+strings.Repeat("é", 5000)+`"}`,
		`{"transactionId":"t","partitionId":"p","status":7,"leaseId":"\u0000"}`,
	)
}

func FuzzAckBatchBody(f *testing.F) {
	fuzzBody(f, "/api/v1/ack/batch",
		`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"00000000-0000-7000-8000-000000000000"}]}`,
		`{"consumerGroup":"g\u0000","acknowledgments":[]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","consumerGroup":"`+strings.Repeat("g", 256)+`"}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","error":"a\u0000b","status":"dlq"}]}`,
		`{"acknowledgments":[null]}`, `{"acknowledgments":[1,"x"]}`,
		"{\"acknowledgments\":[{\"transactionId\":\"\xfe\",\"partitionId\":\"p\"}]}",
	)
}

func FuzzTransactionBody(f *testing.F) {
	fuzzBody(f, "/api/v1/transaction",
		`{"operations":[{"type":"push","queue":"fzt","payload":{"a":"\u0000"}}]}`,
		"{\"operations\":[{\"type\":\"push\",\"queue\":\"fzt\",\"payload\":\"\xff\"}]}",
		`{"operations":[{"type":"push","items":[{"queue":"fzt","data":1,"traceId":"x"}]}]}`,
		`{"operations":[{"type":"ack","transactionId":"`+strings.Repeat("t", 300)+`","partitionId":"00000000-0000-7000-8000-000000000000"}]}`,
		`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","consumerGroup":"\u0000"}],"requiredLeases":["\u0000"]}`,
		`{"operations":[{"type":"push","queue":"fzt","partition":"\u0000"}]}`,
		`{"operations":[],"requiredLeases":[1]}`,
	)
}

func FuzzConfigureBody(f *testing.F) {
	fuzzBody(f, "/api/v1/configure",
		`{"queue":"fzc","namespace":"n","task":"t","options":{"leaseTime":120,"retryLimit":5}}`,
		`{"queue":"fzc","namespace":"`+strings.Repeat("n", 1<<16)+`"}`,
		`{"queue":"fzc","task":"\u0000"}`,
		`{"queue":"fzc","options":{"leaseTime":2147483648,"priority":-1}}`,
		`{"queue":"fzc","options":{"ttl":1e300,"encryptionEnabled":"yes"}}`,
		`{"queue":"fzc","options":[]}`,
	)
}
