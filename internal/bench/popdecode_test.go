package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const samplePop = `{"success":true,"leaseId":"6f1c","messages":[` +
	`{"id":"a1","transactionId":"t-1","partitionId":"p1","partition":"Default","queue":"q","data":{"seq":1,"fill":"x\"y"},"retryCount":0,"createdAt":"2026-11-30T12:00:00.000Z","traceId":null},` +
	`{"transactionId":"t-\u00e9","partitionId":"p1","partition":"Default","data":[1,2.5e3,-0,true,false,null,"s"]},` +
	`null,{}]}`

func TestDecodePopReadsWhatEncodingJSONReads(t *testing.T) {
	for _, in := range []string{samplePop, `{}`, `null`, `{"messages":null}`, ` {"messages":[] , "leaseId":null} `,
		`{"leaseId":"a","leaseId":"b","messages":[{"data":1}],"messages":[{"data":2},{"data":3}]}`} {
		checkDecodePop(t, []byte(in))
	}
	for _, bad := range []string{``, `{`, `{"messages":[}`, `{"leaseId":1}`, `{"a":01}`, `{"a":"\x01"}`,
		`{"a":tru}`, `{"a":"\q"}`, `{} {}`, `{"a":1,}`, `[1]`} {
		var p popAnswer
		if err := decodePop([]byte(bad), &p); err == nil {
			t.Errorf("decodePop(%q) accepted invalid input", bad)
		}
	}
}

func FuzzDecodePop(f *testing.F) {
	for _, in := range []string{samplePop, `{"messages":[{"data":"\ud83d\ude00"}]}`, `{"leaseId":"\xff"}`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecodePop(t, in) })
}

// checkDecodePop requires decodePop to accept exactly the documents encoding/json decodes
// into a popAnswer and to read the same fields from them. encoding/json also matches keys
// case-insensitively and unescaped, which a broker never relies on; such documents are left
// out.
func checkDecodePop(t *testing.T, in []byte) {
	t.Helper()
	var want, got popAnswer
	wantErr := json.Unmarshal(in, &want)
	gotErr := decodePop(in, &got)
	if (wantErr == nil) != (gotErr == nil) {
		if wantErr != nil && hasCaseVariantKey(in) {
			return
		}
		t.Fatalf("%q: encoding/json error %v, decodePop error %v", in, wantErr, gotErr)
	}
	if wantErr == nil && !hasCaseVariantKey(in) && !reflect.DeepEqual(normalize(want), normalize(got)) {
		t.Fatalf("%q:\nencoding/json %+v\ndecodePop     %+v", in, want, got)
	}
}

// normalize compacts raw data, which encoding/json hands over as written but for spacing.
func normalize(p popAnswer) popAnswer {
	for i, m := range p.Messages {
		p.Messages[i].Data = json.RawMessage(strings.TrimSpace(string(m.Data)))
	}
	return p
}

// hasCaseVariantKey reports whether any object key matches a popAnswer field only when case
// is ignored.
func hasCaseVariantKey(in []byte) bool {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return true // not valid JSON at all: the syntax verdicts were compared already
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				for _, f := range []string{"leaseId", "messages", "transactionId", "partitionId", "partition", "data"} {
					if k != f && strings.EqualFold(k, f) || strings.ContainsAny(k, "ſK") || k == f && bytes.Contains(in, []byte(`\u`)) {
						return true
					}
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func BenchmarkDecodePop(b *testing.B) {
	body := []byte(`{"messages":[` + strings.TrimSuffix(strings.Repeat(
		`{"id":"0193a3f0-0000-7000-8000-000000000001","transactionId":"0193a3f0-0000-7000-8000-000000000002","traceId":null,"data":{"seq":1,"sentAt":1764500000000000000,"fill":"`+strings.Repeat("x", 100)+`"},"producerSub":null,"createdAt":"2026-11-30T12:00:00.000Z","partitionId":"0193a3f0-0000-7000-8000-000000000003","partition":"p1","queue":"bench","retryCount":0,"encrypted":false},`, 100), ",") +
		`],"leaseId":"0193a3f0-0000-7000-8000-000000000004"}`)
	b.Run("decodePop", func(b *testing.B) {
		for b.Loop() {
			var p popAnswer
			if err := decodePop(body, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var p popAnswer
			if err := json.Unmarshal(body, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The ack batch body the load generator writes is the JSON encoding/json would write.
func TestAckBatchBodyIsJSON(t *testing.T) {
	p := popAnswer{LeaseID: "l-1", Messages: []poppedMessage{{TransactionID: "t\"1", PartitionID: "p1"}, {TransactionID: "é\n", PartitionID: "p2"}}}
	var got, want any
	if err := json.Unmarshal(ackBatchBody("g<1>", &p), &got); err != nil {
		t.Fatal(err)
	}
	ref, _ := json.Marshal(map[string]any{"consumerGroup": "g<1>", "acknowledgments": []map[string]string{
		{"transactionId": "t\"1", "partitionId": "p1", "leaseId": "l-1"},
		{"transactionId": "é\n", "partitionId": "p2", "leaseId": "l-1"}}})
	_ = json.Unmarshal(ref, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Items a broker spooled are counted from its answer (docs/api/data-api.md §2.3), written
// ones are not.
func TestPushAnswerCountsBufferedItems(t *testing.T) {
	var a pushAnswer
	body := `[{"index":0,"status":"buffered","queue":"q","partition":"p","transactionId":"k"},` +
		`{"index":1,"transaction_id":"k2","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"q"},` +
		`{"index":2,"status":"buffered","queue":"q","partition":"p","transactionId":"k3"}]`
	if err := a.decodeBody([]byte(body)); err != nil || a.Buffered != 2 {
		t.Fatalf("buffered %d, err %v; want 2", a.Buffered, err)
	}
}
