package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// The decoding shortcuts the benchmarks motivated (readJSON's RawMessage path, plainString,
// parseAll) must answer exactly what the plain json.Unmarshal paths answer. These fuzz
// targets check that on their seeds in every test run and on anything `go test -fuzz` finds.

func FuzzReadJSONRawMessage(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, " \n[1, 2]\t\r\n", `"x"`, `null`, "12 ", `{"a":}`, `[1,]`, "\v{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want json.RawMessage
		wantErr := json.Unmarshal(body, &want)
		w := newDiscardWriter()
		var got json.RawMessage
		ok := readJSON(w, newBenchRequest(body).rewind(), &got)
		if len(bytes.TrimSpace(body)) == 0 {
			return // "Empty request body", decided before any decoding
		}
		if ok != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("readJSON(%q) = %q, %v; Unmarshal gives %q, %v", body, got, ok, want, wantErr)
		}
	})
}

func FuzzAsString(f *testing.F) {
	for _, s := range []string{`"orders"`, `""`, ` "a"`, `"a" `, `"\u0000"`, `"a\"b"`, `"é"`, "\"\xff\"", `"\ud800"`, `"`, `5`, "\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := asString(raw)
		var want string
		wantOK := jsonKind(raw) == '"' && json.Unmarshal(raw, &want) == nil && !strings.ContainsRune(want, 0)
		if !wantOK {
			want = ""
		}
		if got != want || ok != wantOK {
			t.Fatalf("asString(%q) = %q, %v; want %q, %v", raw, got, ok, want, wantOK)
		}
	})
}

// FuzzParseAll checks that when the one-pass decode accepts an array, the element-by-element
// decode accepts it too and yields the same items, for each kind of element parseEach serves.
func FuzzParseAll(f *testing.F) {
	for _, s := range []string{
		`[{"queue":"q","payload":{"a": 1},"partition":"p","transactionId":"t"}]`,
		`[{"QUEUE":"q","Payload":1,"queue":"r","payload":null}]`,
		`[null]`, `[{}]`, `["x"]`, `[]`, `[{"queue":"q","payload":1},5]`,
		`[{"transactionId":"t","partitionId":"p","status":"failed","error":"e"}]`,
		`[{"queue":"q","data":{"x":[1]},"traceId":"0198f3c2-7a10-7001-8001-000000000001"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, arr []byte) {
		if !json.Valid(arr) {
			return // parseEach only ever sees parts of a validated body
		}
		checkParseAll(t, arr, pushItem)
		checkParseAll(t, arr, func(a *ackJSON) (mq.AckItem, string) {
			tx, ok1 := asString(a.TransactionID)
			pid, ok2 := asString(a.PartitionID)
			if !ok1 || !ok2 {
				return mq.AckItem{}, "invalid"
			}
			return ackItem(tx, pid, *a, ""), ""
		})
		checkParseAll(t, arr, txnPushItem)
	})
}

func checkParseAll[T, R any](t *testing.T, arr []byte, parse func(*T) (R, string)) {
	t.Helper()
	fast, ok := parseAll(arr, parse)
	if !ok {
		return // parseEach falls back to parseSeq itself
	}
	exact, msg := parseSeq(arr, "not an array", "not an object", parse)
	if msg != "" || !reflect.DeepEqual(fast, exact) {
		t.Fatalf("%s: one pass gives %+v; element by element gives %+v, %q", arr, fast, exact, msg)
	}
}

// FuzzPushFastMatchesExact checks that whenever the one-pass push reader accepts a body, the
// exact path (readJSON, parsePushItems) accepts it too and reads the same items.
func FuzzPushFastMatchesExact(f *testing.F) {
	for _, s := range []string{
		string(benchPushBody(3)), `{"items":[]}`, ` {"x":[1,{"y":null}], "items" : [ {"queue" : "q" , "payload" : null } ] } `,
		`{"items":[{"queue":"q","payload":1}],"items":[{"queue":"r","payload":2,"partition":"p","transactionId":"t"}]}`,
		`{"ITEMS":[{"queue":"q","payload":1}]}`, `{"items":[{"Queue":"q","queue":"r","payload":1}]}`,
		`{"items":[{"queue":"q\u0000","payload":1}]}`, `{"items":[{"queue":"é","payload":"\u00e9"}]}`,
		`{"items":[null]}`, `{"items":null}`, `{"items":[{"queue":"q"}]}`, `{"item\u0073":[]}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkFastMatchesExact(t, body, parsePushFast, parsePushItems) })
}

// The one-pass readers take the common bodies and leave the unusual ones to the exact path
// (whose answers the route tests check).
func TestFastReadersTakeCommonBodies(t *testing.T) {
	for body, want := range map[string]bool{
		string(benchPushBody(100)): true,
		`{"items":[]}`:             true,
		`{"items":[{"queue":"q","payload":{"a":[1,"\u00e9"]},"traceId":"x"}]}`: true,
		`{"items":[{"queue":"q\u0041","payload":1}]}`:                          true,
		`{"Items":[{"queue":"q","payload":1}]}`:                                false,
		`{"items":[{"queue":"q","QUEUE":"r","payload":1}]}`:                    false,
		`{"items":[{"qu\u0065ue":"q","payload":1}]}`:                           false,
		`{"items":[{"queue":"q"}]}`:                                            false,
		`{"items":[{"queue":5,"payload":1}]}`:                                  false,
		`{"items":[{"queue":"q","payload":1}]`:                                 false,
		`{"items":[{"queue":"q","payload":1}]} x`:                              false,
		`{}`: false,
	} {
		if _, ok := parsePushFast([]byte(body)); ok != want {
			t.Errorf("parsePushFast(%.60q) ok=%v, want %v", body, ok, want)
		}
	}
	if _, ok := parseAckBatchFast(benchAckBatchBody()); !ok {
		t.Error("parseAckBatchFast refused a client's ack batch")
	}
}

// FuzzAckBatchFastMatchesExact checks that whenever the one-pass ack batch reader accepts a
// body, the exact path accepts it too and reads the same acknowledgments.
func FuzzAckBatchFastMatchesExact(f *testing.F) {
	for _, s := range []string{
		`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"p","leaseId":"l","status":"completed"}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","consumerGroup":"own","status":"failed","error":"boom"}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":5}],"consumerGroup":null}`,
		`{"acknowledgments":[],"consumergroup":"g"}`, `{"acknowledgments":[{"transactionId":"t"}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","STATUS":"failed"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkFastMatchesExact(t, body, parseAckBatchFast, parseAckBatch) })
}

// checkFastMatchesExact requires the exact path (readJSON's checks, then exact) to accept a
// body whenever the one-pass reader does, and to read the same elements from it.
func checkFastMatchesExact[T any](t *testing.T, body []byte, fast func([]byte) ([]T, bool),
	exact func(json.RawMessage) ([]T, string)) {
	t.Helper()
	got, ok := fast(body)
	if !ok {
		return
	}
	var raw json.RawMessage
	if !readJSON(newDiscardWriter(), newBenchRequest(body).rewind(), &raw) {
		t.Fatalf("the one-pass reader accepted %q, readJSON refuses it", body)
	}
	want, msg := exact(raw)
	if msg != "" || len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%q: one pass %+v; exact %+v %q", body, got, want, msg)
	}
}
