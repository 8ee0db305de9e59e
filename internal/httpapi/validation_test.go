package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (data-api.md, README §2): every 400 message is exact, every status code is the one
// the spec lists, and a rejected request writes nothing.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

// valClient bounds every request of these tests, so that a route that hangs instead of
// answering fails the test rather than running into the binary's deadline.
var valClient = &http.Client{Timeout: 15 * time.Second}

// valResp is one answer: status, headers and the whole body.
type valResp struct {
	code   int
	header http.Header
	body   []byte
}

// valSend sends one request, failing the test when there is no answer. body may be nil (no
// body), a string or []byte (sent verbatim), an io.Reader (streamed without a declared length)
// or anything else (sent as JSON).
func valSend(t testing.TB, method, url string, body any) valResp {
	t.Helper()
	r, err := valRoundTrip(method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// valRoundTrip is valSend for goroutines that must not call t.Fatal.
func valRoundTrip(method, url string, body any) (valResp, error) {
	resp, out, err := roundTrip(context.Background(), valClient, method, url, body, nil)
	if err != nil {
		return valResp{}, err
	}
	return valResp{code: resp.StatusCode, header: resp.Header, body: out}, nil
}

// valDo sends a request to the bundle's broker.
func (b *bundle) valDo(method, path string, body any) valResp {
	b.t.Helper()
	return valSend(b.t, method, b.srv.URL+path, body)
}

// valWantError requires status code and exactly the body {"error":msg} as JSON.
func valWantError(t testing.TB, r valResp, code int, msg string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q; body %s", ct, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if len(got) != 1 || got["error"] != msg {
		t.Fatalf("body %s, want {\"error\":%q}", r.body, msg)
	}
}

// valWantInvalidJSON requires 400 {"error":"Invalid JSON: <parser message>"}.
func valWantInvalidJSON(t testing.TB, r valResp) {
	t.Helper()
	if r.code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", r.code, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	msg, _ := got["error"].(string)
	detail, ok := strings.CutPrefix(msg, "Invalid JSON: ")
	if len(got) != 1 || !ok || strings.TrimSpace(detail) == "" {
		t.Fatalf("body %s, want {\"error\":\"Invalid JSON: <parser message>\"}", r.body)
	}
}

// valWantNoContent requires 204 with an empty body.
func valWantNoContent(t testing.TB, r valResp) {
	t.Helper()
	if r.code != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("status %d body %q, want 204 without body", r.code, r.body)
	}
}

// valKeys requires m to have exactly the given keys.
func valKeys(t testing.TB, m map[string]any, keys ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v (object %v)", got, want, m)
	}
}

// valName pads prefix with three-byte runes to exactly n characters, so that a byte count
// and a character count give different answers.
func valName(t testing.TB, prefix string, n int) string {
	t.Helper()
	pad := n - utf8.RuneCountInString(prefix)
	if pad < 0 {
		t.Fatalf("prefix %q is longer than %d characters", prefix, n)
	}
	return prefix + strings.Repeat("語", pad)
}

var (
	valUUIDRe   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	valUUIDv7Re = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	valMilliRe  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// valPopPath is the wildcard pop route of a queue, with the name escaped as a path segment.
func valPopPath(queue, query string) string {
	p := "/api/v1/pop/queue/" + url.PathEscape(queue)
	if query != "" {
		p += "?" + query
	}
	return p
}

// ---------------------------------------------------------------------------------------------
// POST /api/v1/configure

func TestValidationConfigureErrors(t *testing.T) {
	b := setup(t, testserver.Options{})
	long := strings.Repeat("q", 256)
	cases := []struct {
		name string
		body any
		msg  string
	}{
		{"no queue", `{"options":{}}`, "queue is required"},
		{"queue null", `{"queue":null}`, "queue is required"},
		{"queue number", `{"queue":5}`, "queue is required"},
		{"queue object", `{"queue":{"name":"x"}}`, "queue is required"},
		{"body array", `[{"queue":"x"}]`, "queue is required"},
		{"body string", `"x"`, "queue is required"},
		{"queue 256 ascii", obj{"queue": long}, "queue exceeds 255 characters"},
		{"queue 256 runes", obj{"queue": valName(t, "", 256)}, "queue exceeds 255 characters"},
		{"options array", obj{"queue": b.queue, "options": []any{}}, "options must be an object"},
		{"options string", obj{"queue": b.queue, "options": "leaseTime=1"}, "options must be an object"},
		{"options number", obj{"queue": b.queue, "options": 1}, "options must be an object"},
		{"options bool", obj{"queue": b.queue, "options": true}, "options must be an object"},
		{"queue checked before options", obj{"options": 1}, "queue is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/configure", c.body), http.StatusBadRequest, c.msg)
		})
	}
	// Nothing was created by the rejected calls: the queue has no Default partition to pop.
	t.Cleanup(func() {
		valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/Default", nil))
	})
}

// valIntOptions and valBoolOptions are the 16 options of concepts.md §2.2 by type.
var (
	valIntOptions = []string{"leaseTime", "retryLimit", "retryDelay", "priority", "maxSize", "ttl",
		"delayedProcessing", "windowBuffer", "retentionSeconds", "completedRetentionSeconds",
		"maxWaitTimeSeconds", "dedupWindowSeconds"}
	valBoolOptions = []string{"deadLetterQueue", "dlqAfterMaxRetries", "retentionEnabled", "encryptionEnabled"}
)

func TestValidationConfigureOptionValues(t *testing.T) {
	b := setup(t, testserver.Options{})
	type badValue struct {
		label string
		value any
	}
	intBad := []badValue{{"string", "10"}, {"negative", -1}, {"fraction", 1.5}, {"bool", true},
		{"object", obj{}}, {"array", []any{1}}}
	boolBad := []badValue{{"int", 1}, {"zero", 0}, {"string", "true"}, {"object", obj{}}}
	check := func(name string, bad []badValue) {
		for _, v := range bad {
			t.Run(name+"/"+v.label, func(t *testing.T) {
				t.Parallel()
				r := valSend(t, "POST", b.srv.URL+"/api/v1/configure",
					obj{"queue": b.queue, "options": obj{name: v.value}})
				valWantError(t, r, http.StatusBadRequest, "Invalid value for option "+name)
			})
		}
	}
	for _, name := range valIntOptions {
		check(name, intBad)
	}
	for _, name := range valBoolOptions {
		check(name, boolBad)
	}
	t.Cleanup(func() {
		valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/Default", nil))
	})
}

// valDefaultOptions is the options object of a queue configured with none (concepts.md §2.2).
var valDefaultOptions = map[string]any{"leaseTime": 300.0, "retryLimit": 3.0, "retryDelay": 1000.0,
	"priority": 0.0, "maxSize": 0.0, "ttl": 3600.0, "deadLetterQueue": false, "dlqAfterMaxRetries": false,
	"delayedProcessing": 0.0, "windowBuffer": 0.0, "retentionSeconds": 0.0, "completedRetentionSeconds": 0.0,
	"retentionEnabled": false, "encryptionEnabled": false, "maxWaitTimeSeconds": 0.0, "dedupWindowSeconds": 900.0}

// valConfigure calls configure and requires 200, returning the decoded answer.
func (b *bundle) valConfigure(body any) map[string]any {
	b.t.Helper()
	r := b.valDo("POST", "/api/v1/configure", body)
	if r.code != http.StatusOK {
		b.t.Fatalf("configure: %d %s", r.code, r.body)
	}
	return decode[map[string]any](b.t, r.body)
}

func TestValidationConfigureResponse(t *testing.T) {
	b := setup(t, testserver.Options{})
	all := map[string]any{"leaseTime": 120.0, "retryLimit": 5.0, "retryDelay": 2500.0, "priority": 7.0,
		"maxSize": 1000.0, "ttl": 60.0, "deadLetterQueue": true, "dlqAfterMaxRetries": true,
		"delayedProcessing": 0.0, "windowBuffer": 0.0, "retentionSeconds": 86400.0,
		"completedRetentionSeconds": 3600.0, "retentionEnabled": true, "encryptionEnabled": true,
		"maxWaitTimeSeconds": 7200.0, "dedupWindowSeconds": 3600.0}
	given := map[string]any{"unknownOption": "ignored", "nullIsAbsent": nil}
	for k, v := range all {
		given[k] = v
	}
	given["retryDelay"] = nil // null means absent: the default
	want := maps.Clone(all)
	want["retryDelay"] = 1000.0

	// Non-string namespace and task are ignored: the derived labels apply.
	res := b.valConfigure(obj{"queue": b.queue, "namespace": 5, "task": obj{}, "options": given})
	valKeys(t, res, "configured", "queueId", "partitionId", "queue", "namespace", "task", "options")
	qid, _ := res["queueId"].(string)
	pid, _ := res["partitionId"].(string)
	if res["configured"] != true || res["queue"] != b.queue || res["namespace"] != b.queue || res["task"] != "" ||
		!valUUIDRe.MatchString(qid) || !valUUIDRe.MatchString(pid) {
		t.Fatalf("configure answer %v", res)
	}
	opts, _ := res["options"].(map[string]any)
	valKeys(t, opts, valKeysOf(valDefaultOptions)...)
	if !valEqualJSON(opts, want) {
		t.Fatalf("options %v, want %v", opts, want)
	}

	// A second configure keeps the queue and its Default partition, and replaces every option.
	res = b.valConfigure(obj{"queue": b.queue})
	if res["queueId"] != qid || res["partitionId"] != pid {
		t.Fatalf("reconfigure changed ids: %v (was %s, %s)", res, qid, pid)
	}
	if !valEqualJSON(res["options"], valDefaultOptions) {
		t.Fatalf("options after a configure without options %v, want the defaults", res["options"])
	}
	res = b.valConfigure(obj{"queue": b.queue, "options": nil})
	if !valEqualJSON(res["options"], valDefaultOptions) || res["partitionId"] != pid {
		t.Fatalf("options:null answer %v", res)
	}

	// A push without a partition writes into that very Default partition.
	p := b.push("", obj{"payload": 1})
	if p[0].PartitionID != pid {
		t.Fatalf("push went to partition %s, Default is %s", p[0].PartitionID, pid)
	}
}

func TestValidationConfigureAfterPush(t *testing.T) {
	b := setup(t, testserver.Options{})
	// The push creates the queue and its Default partition; configure reports that partition.
	p := b.push("", obj{"payload": 1})
	res := b.valConfigure(obj{"queue": b.queue, "namespace": "", "task": "t"})
	if res["partitionId"] != p[0].PartitionID || res["namespace"] != "" || res["task"] != "t" {
		t.Fatalf("configure after push: %v, pushed into %s", res, p[0].PartitionID)
	}
	again := b.valConfigure(obj{"queue": b.queue})
	if again["queueId"] != res["queueId"] || again["partitionId"] != p[0].PartitionID {
		t.Fatalf("second configure %v, first %v", again, res)
	}
}

func TestValidationConfigureReplacesOptions(t *testing.T) {
	b := setup(t, testserver.Options{})
	// A long delayedProcessing hides the message; a configure that omits the option brings
	// back the default 0, and the message becomes visible.
	b.valConfigure(obj{"queue": b.queue, "namespace": "ns-" + b.queue, "task": "t",
		"options": obj{"delayedProcessing": 3600, "priority": 9}})
	b.push("", obj{"payload": "hidden"})
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))

	res := b.valConfigure(obj{"queue": b.queue})
	if res["namespace"] != b.queue || res["task"] != "" {
		t.Fatalf("labels not back to the derived ones: %v", res)
	}
	if !valEqualJSON(res["options"], valDefaultOptions) {
		t.Fatalf("options %v, want the defaults", res["options"])
	}
	// The labels in force are the derived ones too: the configured namespace finds nothing
	// although the message is now visible, the derived one finds it.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace="+url.QueryEscape("ns-"+b.queue), nil))
	if p, ok := b.pop("/api/v1/pop?namespace=" + url.QueryEscape(b.queue)); !ok || len(p.Messages) != 1 {
		t.Fatalf("message still hidden after the reconfigure: %+v", p)
	}
}

func TestValidationConfigureLongNames(t *testing.T) {
	b := setup(t, testserver.Options{})
	name := valName(t, b.queue+"-", 255) // 255 characters, far more than 255 bytes
	res := b.valConfigure(obj{"queue": name})
	if res["queue"] != name || res["namespace"] != name {
		t.Fatalf("configure answer %v", res)
	}
}

func TestValidationLabelDerivation(t *testing.T) {
	b := setup(t, testserver.Options{})
	cases := []struct {
		suffix, ns, task string
	}{
		{"", "", ""},
		{".requested", "", "requested"},
		{".invoice.created", "", "invoice"},
		{".a.b.c", "", "a"},
		{".", "", ""},
		{"..x", "", ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			// Each case has a namespace of its own, so namespace pops see only its queues.
			base := fmt.Sprintf("%s-%d", b.queue, i)
			configured, pushed := base+"-c"+c.suffix, base+"-p"+c.suffix
			ns, task := base+"-c"+c.ns, c.task
			res := b.valConfigure(obj{"queue": configured, "namespace": nil, "task": nil})
			if res["namespace"] != ns || res["task"] != task {
				t.Fatalf("configure %q: namespace %q task %q, want %q %q", configured, res["namespace"], res["task"], ns, task)
			}
			// An implicitly created queue derives the same labels: a namespace/task pop finds it.
			b.push("", obj{"queue": pushed, "payload": c.suffix})
			q := url.Values{"namespace": {base + "-p" + c.ns}}
			if task != "" {
				q.Set("task", task)
			}
			p, ok := b.pop("/api/v1/pop?" + q.Encode())
			if !ok || p.Queue != pushed || len(p.Messages) != 1 {
				t.Fatalf("namespace pop %v: %+v", q, p)
			}
			if task != "" {
				q.Set("task", task+"x")
				valWantNoContent(t, b.valDo("GET", "/api/v1/pop?"+q.Encode(), nil))
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// POST /api/v1/push

func TestValidationPushErrors(t *testing.T) {
	b := setup(t, testserver.Options{})
	q := b.queue
	item := func(kv ...any) obj {
		o := obj{}
		for i := 0; i < len(kv); i += 2 {
			o[kv[i].(string)] = kv[i+1]
		}
		return o
	}
	items := func(it ...any) obj { return obj{"items": it} }
	cases := []struct {
		name string
		body any
		msg  string
	}{
		{"no items", `{}`, "items array is required"},
		{"items null", `{"items":null}`, "items array is required"},
		{"items object", `{"items":{"queue":"x","payload":1}}`, "items array is required"},
		{"items string", `{"items":"[]"}`, "items array is required"},
		{"body array", `[{"queue":"x","payload":1}]`, "items array is required"},
		{"item number", items(5), "Each item must be an object"},
		{"item null", items(nil), "Each item must be an object"},
		{"item string", items("x"), "Each item must be an object"},
		{"item array", items([]any{}), "Each item must be an object"},
		{"queue missing", items(item("payload", 1)), "Queue must be a string"},
		{"queue null", items(item("queue", nil, "payload", 1)), "Queue must be a string"},
		{"queue number", items(item("queue", 1, "payload", 1)), "Queue must be a string"},
		{"queue 256", items(item("queue", valName(t, "", 256), "payload", 1)), "queue exceeds 255 characters"},
		{"partition number", items(item("queue", q, "partition", 1, "payload", 1)), "Partition must be a string"},
		{"partition bool", items(item("queue", q, "partition", false, "payload", 1)), "Partition must be a string"},
		{"partition object", items(item("queue", q, "partition", obj{}, "payload", 1)), "Partition must be a string"},
		{"partition 256", items(item("queue", q, "partition", valName(t, "", 256), "payload", 1)), "partition exceeds 255 characters"},
		{"payload missing", items(item("queue", q)), "payload is required"},
		{"data is no alias", items(item("queue", q, "data", obj{"a": 1})), "payload is required"},
		{"transactionId number", items(item("queue", q, "payload", 1, "transactionId", 7)), "TransactionId must be a string"},
		{"transactionId bool", items(item("queue", q, "payload", 1, "transactionId", true)), "TransactionId must be a string"},
		{"transactionId 256", items(item("queue", q, "payload", 1, "transactionId", valName(t, "", 256))), "transactionId exceeds 255 characters"},
		{"first bad item wins", items(item("queue", q, "payload", 1), item("queue", q, "partition", 2, "payload", 1),
			item("queue", 3, "payload", 1)), "Partition must be a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/push", c.body), http.StatusBadRequest, c.msg)
		})
	}
	t.Cleanup(func() { valWantNoContent(t, b.valDo("GET", valPopPath(q, ""), nil)) })
}

func TestValidationPushValidatesAllItemsFirst(t *testing.T) {
	b := setup(t, testserver.Options{})
	first, second := b.queue+"-first", b.queue+"-second"
	body := obj{"items": []obj{
		{"queue": first, "payload": 1},
		{"queue": second, "partition": "p", "payload": 2},
		{"queue": b.queue, "payload": 3, "transactionId": 4},
	}}
	valWantError(t, b.valDo("POST", "/api/v1/push", body), http.StatusBadRequest, "TransactionId must be a string")
	valWantNoContent(t, b.valDo("GET", valPopPath(first, ""), nil))
	valWantNoContent(t, b.valDo("GET", valPopPath(second, ""), nil))
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
	// The rejected request left nothing behind that could get in the way of a good one.
	b.push("", obj{"queue": first, "payload": 1})
	if p, ok := b.pop(valPopPath(first, "batch=10")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop after a good push: %+v", p)
	}
}

func TestValidationPushEmptyItems(t *testing.T) {
	b := setup(t, testserver.Options{})
	r := b.valDo("POST", "/api/v1/push", `{"items":[]}`)
	if r.code != http.StatusCreated || string(r.body) != "[]" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("empty push: %d %q %v", r.code, r.body, r.header)
	}
}

func TestValidationPushNameLengths(t *testing.T) {
	b := setup(t, testserver.Options{})
	queue := valName(t, b.queue+"-", 255)
	partition := valName(t, "p-", 255)
	key := valName(t, "k-", 255)
	res := b.push("", obj{"queue": queue, "partition": partition, "transactionId": key, "payload": "long"})
	if res[0].Status != "queued" || res[0].TransactionID != key || res[0].QueueName != queue {
		t.Fatalf("push answer %+v", res)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition))
	if !ok || p.Queue != queue || p.Partition != partition || len(p.Messages) != 1 || p.Messages[0].TransactionID != key {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationPushDefaults(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("",
		obj{"partition": nil, "payload": "null partition"},
		obj{"partition": "", "payload": "empty partition", "transactionId": ""},
		obj{"payload": "no partition", "transactionId": nil},
		obj{"payload": nil, "transactionId": "given", "traceId": uuid.NewString(), "producerSub": "x", "bufferMs": 5},
	)
	for i, r := range res {
		if r.Status != "queued" || r.Index != i || r.PartitionID != res[0].PartitionID || r.TraceID != nil {
			t.Fatalf("item %d: %+v", i, r)
		}
		if i < 3 && (r.TransactionID != r.MessageID || !valUUIDv7Re.MatchString(r.MessageID)) {
			t.Fatalf("item %d: transaction_id %q should be the minted id %q", i, r.TransactionID, r.MessageID)
		}
	}
	if res[3].TransactionID != "given" {
		t.Fatalf("item 3: %+v", res[3])
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/Default?batch=10")
	if !ok || len(p.Messages) != 4 || p.PartitionID != res[0].PartitionID {
		t.Fatalf("Default partition pop %+v", p)
	}
	for i, m := range p.Messages {
		if m.ID != res[i].MessageID || m.TransactionID != res[i].TransactionID || m.TraceID != nil {
			t.Fatalf("message %d: %+v, pushed %+v", i, m, res[i])
		}
	}
	if string(p.Messages[3].Data) != "null" {
		t.Fatalf("null payload came back as %s", p.Messages[3].Data)
	}
}

func TestValidationPushResponseShapes(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.valConfigure(obj{"queue": b.queue, "options": obj{"maxSize": 2}})
	body := obj{"items": []obj{
		{"queue": b.queue, "partition": "p", "payload": 1, "transactionId": "k-1"},
		{"queue": b.queue, "partition": "p", "payload": 2, "transactionId": "k-1"},
		{"queue": b.queue, "partition": "p", "payload": 3, "transactionId": "k-2"},
		{"queue": b.queue, "partition": "p", "payload": 4, "transactionId": "k-3"},
	}}
	r := b.valDo("POST", "/api/v1/push", body)
	if r.code != http.StatusCreated {
		t.Fatalf("push: %d %s", r.code, r.body)
	}
	res := decode[[]map[string]any](t, r.body)
	if len(res) != 4 {
		t.Fatalf("push answer %s", r.body)
	}
	queued, dup, full := res[0], res[1], res[3]
	valKeys(t, queued, "index", "transaction_id", "status", "message_id", "partition_id", "trace_id", "queueName")
	mid, _ := queued["message_id"].(string)
	pid, _ := queued["partition_id"].(string)
	if queued["index"] != 0.0 || queued["transaction_id"] != "k-1" || queued["status"] != "queued" ||
		!valUUIDv7Re.MatchString(mid) || !valUUIDRe.MatchString(pid) || queued["trace_id"] != nil ||
		queued["queueName"] != b.queue {
		t.Fatalf("queued element %v", queued)
	}
	valKeys(t, dup, "index", "transaction_id", "status", "message_id", "queueName")
	if dup["index"] != 1.0 || dup["transaction_id"] != "k-1" || dup["status"] != "duplicate" ||
		dup["message_id"] != mid || dup["queueName"] != b.queue {
		t.Fatalf("duplicate element %v", dup)
	}
	if res[2]["status"] != "queued" {
		t.Fatalf("third element %v", res[2])
	}
	valKeys(t, full, "index", "transaction_id", "status", "error", "queueName")
	if full["index"] != 3.0 || full["transaction_id"] != "k-3" || full["status"] != "failed" ||
		full["error"] != "queue full" || full["queueName"] != b.queue {
		t.Fatalf("failed element %v", full)
	}

	// A duplicate in a later request has the same shape and names the stored message.
	r = b.valDo("POST", "/api/v1/push", obj{"items": []obj{{"queue": b.queue, "partition": "p", "payload": 5, "transactionId": "k-2"}}})
	res = decode[[]map[string]any](t, r.body)
	if r.code != http.StatusCreated || len(res) != 1 {
		t.Fatalf("second push: %d %s", r.code, r.body)
	}
	valKeys(t, res[0], "index", "transaction_id", "status", "message_id", "queueName")
	if res[0]["status"] != "duplicate" || res[0]["index"] != 0.0 {
		t.Fatalf("later duplicate %v", res[0])
	}
}

// ---------------------------------------------------------------------------------------------
// Body errors common to every route that takes a body (README §2.4)

func TestValidationBodyErrors(t *testing.T) {
	b := setup(t, testserver.Options{})
	routes := []string{"/api/v1/configure", "/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch"}
	for _, route := range routes {
		t.Run(strings.TrimPrefix(route, "/api/v1/"), func(t *testing.T) {
			t.Parallel()
			url := b.srv.URL + route
			valWantError(t, valSend(t, "POST", url, nil), http.StatusBadRequest, "Empty request body")
			valWantError(t, valSend(t, "POST", url, ""), http.StatusBadRequest, "Empty request body")
			valWantError(t, valSend(t, "POST", url, " \r\n\t "), http.StatusBadRequest, "Empty request body")
			for _, bad := range []string{`{`, `{"queue":}`, `nope`, `{"items":[]} trailing`, `{'a':1}`} {
				valWantInvalidJSON(t, valSend(t, "POST", url, bad))
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// Pop

func TestValidationPopParams(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1})
	paths := map[string]string{
		"queue":     valPopPath(b.queue, ""),
		"partition": "/api/v1/pop/queue/" + b.queue + "/partition/p",
		"namespace": "/api/v1/pop?namespace=" + url.QueryEscape(b.queue),
	}
	cases := []struct {
		query url.Values
		msg   string
	}{
		{url.Values{"consumerGroup": {valName(t, "", 256)}}, "consumerGroup exceeds 255 characters"},
		{url.Values{"subscriptionMode": {"bogus"}}, "Invalid subscriptionMode: bogus"},
		{url.Values{"subscriptionMode": {"ALL"}}, "Invalid subscriptionMode: ALL"},
		{url.Values{"subscriptionMode": {"new only"}}, "Invalid subscriptionMode: new only"},
		{url.Values{"subscriptionFrom": {"yesterday"}}, "Invalid subscriptionFrom: yesterday"},
		{url.Values{"subscriptionFrom": {"NOW"}}, "Invalid subscriptionFrom: NOW"},
		{url.Values{"subscriptionFrom": {"2026-13-01T00:00:00Z"}}, "Invalid subscriptionFrom: 2026-13-01T00:00:00Z"},
		{url.Values{"subscriptionFrom": {"2026-02-30T00:00:00Z"}}, "Invalid subscriptionFrom: 2026-02-30T00:00:00Z"},
		{url.Values{"subscriptionFrom": {"2026-01-01"}}, "Invalid subscriptionFrom: 2026-01-01"},
		{url.Values{"subscriptionFrom": {"1700000000"}}, "Invalid subscriptionFrom: 1700000000"},
		// Validated for __QUEUE_MODE__ too, and with a valid mode alongside.
		{url.Values{"subscriptionMode": {"new"}, "subscriptionFrom": {"later"}}, "Invalid subscriptionFrom: later"},
		{url.Values{"consumerGroup": {"g"}, "subscriptionMode": {"x"}}, "Invalid subscriptionMode: x"},
	}
	for form, path := range paths {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", form, i), func(t *testing.T) {
				t.Parallel()
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				r := valSend(t, "GET", b.srv.URL+path+sep+c.query.Encode(), nil)
				valWantError(t, r, http.StatusBadRequest, c.msg)
			})
		}
	}
	// The message is still there: none of the rejected pops claimed it.
	t.Cleanup(func() {
		if p, ok := b.pop(valPopPath(b.queue, "")); !ok || len(p.Messages) != 1 {
			t.Errorf("message gone after rejected pops: %+v", p)
		}
	})
}

func TestValidationPopAcceptedParams(t *testing.T) {
	b := setup(t, testserver.Options{})
	// Valid values on an unknown queue: no 400, just nothing to deliver.
	missing := b.queue + "-missing"
	queries := []url.Values{
		{"consumerGroup": {valName(t, "g-", 255)}},
		{"consumerGroup": {""}},
		{"subscriptionMode": {""}},
		{"subscriptionMode": {"all"}},
		{"subscriptionMode": {"new"}},
		{"subscriptionMode": {"new-only"}},
		{"subscriptionFrom": {""}},
		{"subscriptionFrom": {"now"}},
		{"subscriptionFrom": {"2026-01-01T00:00:00Z"}},
		{"subscriptionFrom": {"2026-01-01 00:00:00"}},
		{"subscriptionFrom": {"2026-01-01T00:00:00.123456789+02:00"}},
		{"consumerGroup": {"g"}, "subscriptionFrom": {"2026-01-01T00:00:00-05:30"}},
	}
	for i, q := range queries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantNoContent(t, valSend(t, "GET", b.srv.URL+valPopPath(missing, q.Encode()), nil))
		})
	}
	t.Run("unencoded plus offset", func(t *testing.T) {
		t.Parallel()
		// "+02:00" unencoded decodes to " 02:00", which reads as "+02:00" (README §2.3).
		valWantNoContent(t, valSend(t, "GET", b.srv.URL+valPopPath(missing, "subscriptionFrom=2026-01-01T00:00:00+02:00"), nil))
	})
}

func TestValidationPopNamespaceRequired(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, q := range []string{"", "?namespace=", "?task=", "?namespace=&task=", "?batch=5", "?queue=" + b.queue} {
		valWantError(t, b.valDo("GET", "/api/v1/pop"+q, nil), http.StatusBadRequest, "namespace or task is required")
	}
	// One filter is enough; a namespace nobody has answers 204.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace="+b.queue+"-none", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?task="+b.queue+"-none", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace=&task="+b.queue+"-none", nil))
}

func TestValidationPopEmptyOutcomes(t *testing.T) {
	// The default long-poll deadline (30 s) is longer than valClient's timeout, so a pop that
	// waits where it must not fails the test instead of passing late.
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1})
	for _, path := range []string{
		valPopPath(b.queue+"-missing", ""),
		valPopPath(b.queue+"-missing", "consumerGroup=g"),
		"/api/v1/pop/queue/" + b.queue + "-missing/partition/p",
		"/api/v1/pop/queue/" + b.queue + "/partition/nope",
		"/api/v1/pop/queue/" + b.queue + "/partition/Default",
		// timeout=0 is one attempt even with wait=true.
		"/api/v1/pop/queue/" + b.queue + "/partition/nope?wait=true&timeout=0",
		valPopPath(b.queue+"-missing", "wait=true&timeout=0"),
		valPopPath(b.queue, "wait=true&timeout=0&consumerGroup=g&subscriptionMode=new"),
		"/api/v1/pop?namespace=" + b.queue + "-missing&wait=true&timeout=0",
	} {
		valWantNoContent(t, b.valDo("GET", path, nil))
	}
	// The message is still deliverable.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationPopTimeoutFallback(t *testing.T) {
	const def = 400 * time.Millisecond
	b := setup(t, testserver.Options{DefaultTimeout: def})
	// A negative or malformed timeout is the default: the long poll lasts that long, then 204.
	// wait is true for "true" or "1" in any case (README §2.1).
	for _, q := range []string{"wait=true&timeout=-5", "wait=true&timeout=abc", "wait=true&timeout=", "wait=true",
		"wait=1", "wait=TRUE", "wait=True&wait=false"} {
		start := time.Now()
		valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, q), nil))
		if waited := time.Since(start); waited < def-50*time.Millisecond {
			t.Fatalf("%s: answered after %v, before the default deadline %v", q, waited, def)
		}
	}
}

func TestValidationPopEmptyGroupIsQueueMode(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("", obj{"payload": 1})
	p, ok := b.pop(valPopPath(b.queue, "consumerGroup="))
	if !ok || p.ConsumerGroup != "__QUEUE_MODE__" || len(p.Messages) != 1 ||
		p.Messages[0].ConsumerGroup != "__QUEUE_MODE__" {
		t.Fatalf("pop %+v", p)
	}
	// The same group: its lease hides the message from a pop that names no group.
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
}

func TestValidationPopBatchFallback(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1}, obj{"payload": 2}, obj{"payload": 3})
	cases := []struct {
		query string
		want  int
	}{
		{"batch=0", 1},
		{"batch=-3", 1},
		{"batch=abc", 1},
		{"batch=", 1},
		{"batch=1.5", 1},
		{"batch=99999999999999999999", 1},
		{"batch=2", 2},
		{"batch=2&batch=3", 2},
		{"batch=10&partitions=0", 3},
		{"batch=10&partitions=x", 3},
	}
	for i, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			// Each case reads as a group of its own, so they do not lease each other out.
			p, ok := b.pop(valPopPath(b.queue, fmt.Sprintf("consumerGroup=g%d&%s", i, c.query)))
			if !ok || len(p.Messages) != c.want {
				t.Fatalf("got %d messages, want %d: %+v", len(p.Messages), c.want, p)
			}
		})
	}
}

func TestValidationPopEncodedSlash(t *testing.T) {
	b := setup(t, testserver.Options{})
	queue, partition := b.queue+"/sub", "a/b"
	b.push("", obj{"queue": queue, "partition": partition, "payload": "slash"})
	b.push("", obj{"queue": b.queue, "payload": "plain"})
	// /pop/queue/<q>/sub would be an unknown route; %2F keeps the slash inside the segment.
	valWantError(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/sub", nil), http.StatusNotFound, "Not found")
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "%2Fsub/partition/a%2fb")
	if !ok || p.Queue != queue || p.Partition != partition || len(p.Messages) != 1 ||
		string(p.Messages[0].Data) != `"slash"` {
		t.Fatalf("pop %+v", p)
	}
	// The queue without the suffix is a different queue.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || string(p.Messages[0].Data) != `"plain"` {
		t.Fatalf("pop %+v", p)
	}
}

// ---------------------------------------------------------------------------------------------
// Ack and ack batch

func TestValidationAckErrors(t *testing.T) {
	b := setup(t, testserver.Options{})
	pid := uuid.NewString()
	cases := []struct {
		body any
		msg  string
	}{
		{`{}`, "transactionId is required"},
		{`[]`, "transactionId is required"},
		{`"x"`, "transactionId is required"},
		{obj{"partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": nil, "partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": 1, "partitionId": pid}, "transactionId is required"},
		{obj{"transactionId": "k"}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": nil}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": 5}, "partitionId is required to ensure message uniqueness"},
		{obj{"transactionId": "k", "partitionId": obj{}}, "partitionId is required to ensure message uniqueness"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/ack", c.body), http.StatusBadRequest, c.msg)
		})
	}
}

// valNotFound is the exact ack answer for a message in a partition that does not exist. Such
// a pair holds no live lease, so leaseReleased is true (concepts.md §8.3).
func valNotFound(index int, tx string) map[string]any {
	return map[string]any{"index": float64(index), "transactionId": tx, "success": false,
		"error": "Message not found", "queueName": nil, "partitionName": nil, "leaseReleased": true,
		"dlq": false, "alreadyCommitted": false}
}

func TestValidationAckUnknownPartition(t *testing.T) {
	b := setup(t, testserver.Options{})
	res := b.push("p", obj{"payload": 1, "transactionId": "k"})
	pidReal := res[0].PartitionID
	for _, pid := range []string{"not-a-uuid", "", uuid.NewString(), "{" + pidReal + "}", "urn:uuid:" + pidReal,
		strings.ReplaceAll(pidReal, "-", ""), pidReal + "0"} {
		t.Run(pid, func(t *testing.T) {
			r := b.valDo("POST", "/api/v1/ack", obj{"transactionId": "k", "partitionId": pid, "status": "completed"})
			if r.code != http.StatusOK {
				t.Fatalf("ack: %d %s", r.code, r.body)
			}
			got := decode[[]map[string]any](t, r.body)
			if len(got) != 1 || !valEqualJSON(got[0], valNotFound(0, "k")) {
				t.Fatalf("ack answer %s", r.body)
			}
		})
	}
	// None of them touched the message.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationAckGroupDefault(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("a", obj{"payload": 1, "transactionId": "k1"})
	b.push("b", obj{"payload": 2, "transactionId": "k2"})
	// An empty or non-string consumerGroup on /ack means __QUEUE_MODE__.
	for _, c := range []struct{ partition, key string }{{"a", "k1"}, {"b", "k2"}} {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/" + c.partition)
		if !ok {
			t.Fatalf("nothing popped from %s", c.partition)
		}
		group := any("")
		if c.partition == "b" {
			group = 5
		}
		a := b.ack(obj{"transactionId": c.key, "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": group})
		if !a.Success || !a.LeaseReleased || a.AlreadyCommitted || a.PartitionName == nil || *a.PartitionName != c.partition {
			t.Fatalf("ack with consumerGroup %v: %+v", group, a)
		}
	}
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
}

func TestValidationAckBatchErrors(t *testing.T) {
	b := setup(t, testserver.Options{})
	pid := uuid.NewString()
	const noTx = "Each acknowledgment must have a valid transactionId string"
	const noPid = "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"
	good := obj{"transactionId": "k", "partitionId": pid}
	acks := func(a ...any) obj { return obj{"acknowledgments": a} }
	cases := []struct {
		body any
		msg  string
	}{
		{`{}`, "acknowledgments array is required"},
		{`[]`, "acknowledgments array is required"},
		{`{"acknowledgments":null}`, "acknowledgments array is required"},
		{`{"acknowledgments":{}}`, "acknowledgments array is required"},
		{`{"acknowledgments":"[]"}`, "acknowledgments array is required"},
		{`{"consumerGroup":"g"}`, "acknowledgments array is required"},
		{acks(5), noTx},
		{acks(nil), noTx},
		{acks("k"), noTx},
		{acks(obj{}), noTx},
		{acks(obj{"transactionId": 1, "partitionId": pid}), noTx},
		{acks(obj{"transactionId": "k"}), noPid},
		{acks(obj{"transactionId": "k", "partitionId": nil}), noPid},
		{acks(obj{"transactionId": "k", "partitionId": 1}), noPid},
		{acks(good, obj{"transactionId": "k"}, 5), noPid},
		{acks(good, good, obj{"partitionId": pid}), noTx},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch", c.body), http.StatusBadRequest, c.msg)
		})
	}
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		r := valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch", `{"acknowledgments":[]}`)
		if r.code != http.StatusOK || string(r.body) != "[]" || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("empty batch: %d %q", r.code, r.body)
		}
	})
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		r := valSend(t, "POST", b.srv.URL+"/api/v1/ack/batch",
			acks(obj{"transactionId": "a", "partitionId": "bad"}, obj{"transactionId": "b", "partitionId": pid}))
		got := decode[[]map[string]any](t, r.body)
		if r.code != http.StatusOK || len(got) != 2 || !valEqualJSON(got[0], valNotFound(0, "a")) ||
			!valEqualJSON(got[1], valNotFound(1, "b")) {
			t.Fatalf("batch: %d %s", r.code, r.body)
		}
	})
}

func TestValidationAckBatchNothingAppliedOnError(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1, "transactionId": "k"})
	p, ok := b.pop(valPopPath(b.queue, ""))
	if !ok {
		t.Fatal("nothing popped")
	}
	valid := obj{"transactionId": "k", "partitionId": p.PartitionID, "leaseId": p.LeaseID}
	r := b.valDo("POST", "/api/v1/ack/batch", obj{"acknowledgments": []any{valid, obj{"transactionId": "x"}}})
	valWantError(t, r, http.StatusBadRequest,
		"Each acknowledgment must have a valid partitionId string to ensure message uniqueness")
	// Had the first element been applied, the lease would be released and unknown now.
	if ext := b.valExtend(p.LeaseID, `{"seconds":30}`); ext["success"] != true {
		t.Fatalf("lease gone after a rejected batch: %v", ext)
	}
	if a := b.ack(valid); !a.Success || !a.LeaseReleased || a.AlreadyCommitted {
		t.Fatalf("ack after the rejected batch %+v", a)
	}
}

func TestValidationAckBatchConsumerGroups(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p1", obj{"payload": 1, "transactionId": "k1"})
	b.push("p2", obj{"payload": 2, "transactionId": "k2"})
	b.push("p3", obj{"payload": 3, "transactionId": "k3"})
	part := func(name, group string) popped {
		p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/" + name + "?consumerGroup=" + group)
		if !ok {
			t.Fatalf("nothing popped from %s for %s", name, group)
		}
		return p
	}
	p1, p2, p3 := part("p1", "g1"), part("p2", "g2"), part("p3", "g1")
	r := b.valDo("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g1", "acknowledgments": []obj{
		{"transactionId": "k1", "partitionId": p1.PartitionID, "leaseId": p1.LeaseID, "consumerGroup": ""},
		{"transactionId": "k2", "partitionId": p2.PartitionID, "leaseId": p2.LeaseID, "consumerGroup": "g2"},
		{"transactionId": "k3", "partitionId": p3.PartitionID, "leaseId": p3.LeaseID, "consumerGroup": 7},
	}})
	if r.code != http.StatusOK {
		t.Fatalf("batch: %d %s", r.code, r.body)
	}
	res := decode[[]acked](t, r.body)
	if len(res) != 3 {
		t.Fatalf("batch answer %s", r.body)
	}
	for i, a := range res {
		if !a.Success || a.Index != i || !a.LeaseReleased || a.QueueName == nil || *a.QueueName != b.queue {
			t.Fatalf("element %d: %s", i, r.body)
		}
	}
	// Each group consumed exactly what it acked; g1 still has p2 to read.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/p1?consumerGroup=g1", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/p2?consumerGroup=g2", nil))
	part("p2", "g1")

	// The element's group wins over the top-level one: g2's lease acked as g3 is rejected
	// and g2's batch stays leased.
	p := part("p1", "g2")
	r = b.valDo("POST", "/api/v1/ack/batch", obj{"consumerGroup": "g2", "acknowledgments": []obj{
		{"transactionId": "k1", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "consumerGroup": "g3"}}})
	res = decode[[]acked](t, r.body)
	if r.code != http.StatusOK || len(res) != 1 || res[0].Success {
		t.Fatalf("ack under the element's group: %d %s", r.code, r.body)
	}
	if ext := b.valExtend(p.LeaseID, nil); ext["success"] != true {
		t.Fatalf("g2's lease after an ack as g3: %v", ext)
	}
}

// ---------------------------------------------------------------------------------------------
// Lease extension

// valExtend posts a lease extension and returns its single result, requiring 200.
func (b *bundle) valExtend(lease string, body any) map[string]any {
	b.t.Helper()
	r := b.valDo("POST", "/api/v1/lease/"+url.PathEscape(lease)+"/extend", body)
	if r.code != http.StatusOK {
		b.t.Fatalf("extend: %d %s", r.code, r.body)
	}
	res := decode[[]map[string]any](b.t, r.body)
	if len(res) != 1 {
		b.t.Fatalf("extend answer %s", r.body)
	}
	valKeys(b.t, res[0], "index", "leaseId", "success", "error", "expiresAt")
	return res[0]
}

func TestValidationLeaseSeconds(t *testing.T) {
	b := setup(t, testserver.Options{})
	lease := uuid.NewString()
	for _, body := range []string{`{"seconds":0}`, `{"seconds":-1}`, `{"seconds":1.5}`, `{"seconds":"10"}`,
		`{"seconds":true}`, `{"seconds":{}}`, `{"seconds":[60]}`, `{"seconds":0.5}`} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			r := valSend(t, "POST", b.srv.URL+"/api/v1/lease/"+lease+"/extend", body)
			valWantError(t, r, http.StatusBadRequest, "seconds must be a positive integer")
		})
	}
}

func TestValidationLeaseUnknown(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, lease := range []string{uuid.NewString(), uuid.Must(uuid.NewV7()).String(), "not-a-lease", "00000000-0000-0000-0000-000000000000"} {
		for _, body := range []any{nil, `{}`, `{"seconds":30}`} {
			got := b.valExtend(lease, body)
			want := map[string]any{"index": 0.0, "leaseId": lease, "success": false, "error": "Lease not found", "expiresAt": nil}
			if !valEqualJSON(got, want) {
				t.Fatalf("extend %s with %v: %v", lease, body, got)
			}
		}
	}
}

func TestValidationLeaseExtend(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.valConfigure(obj{"queue": b.queue, "options": obj{"leaseTime": 10}})
	b.push("", obj{"payload": 1, "transactionId": "k"})
	p, ok := b.pop(valPopPath(b.queue, ""))
	if !ok {
		t.Fatal("nothing popped")
	}
	expires := func(body any) time.Time {
		t.Helper()
		got := b.valExtend(p.LeaseID, body)
		at, _ := got["expiresAt"].(string)
		if got["success"] != true || got["error"] != nil || got["leaseId"] != p.LeaseID || got["index"] != 0.0 ||
			!valMilliRe.MatchString(at) {
			t.Fatalf("extend with %v: %v", body, got)
		}
		ts, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	within := func(ts time.Time, d time.Duration) bool {
		return ts.After(time.Now().Add(d-10*time.Second)) && ts.Before(time.Now().Add(d+10*time.Second))
	}
	// An empty body and {} mean 60 seconds; null seconds too.
	for _, body := range []any{nil, "", `{}`, `{"seconds":null}`} {
		if ts := expires(body); !within(ts, 60*time.Second) {
			t.Fatalf("extend with %q: expires %v, want about now+60s", body, ts)
		}
	}
	// max(expiry, now+seconds): a shorter extension does not shorten the lease.
	if ts := expires(`{"seconds":5}`); !within(ts, 60*time.Second) {
		t.Fatalf("a 5 s extension moved the expiry to %v", ts)
	}
	if ts := expires(`{"seconds":600}`); !within(ts, 600*time.Second) {
		t.Fatalf("a 600 s extension gave %v", ts)
	}
	// Once the ack releases the lease it is unknown.
	if a := b.ack(obj{"transactionId": "k", "partitionId": p.PartitionID, "leaseId": p.LeaseID}); !a.LeaseReleased {
		t.Fatalf("ack %+v", a)
	}
	got := b.valExtend(p.LeaseID, nil)
	if got["success"] != false || got["error"] != "Lease not found" || got["expiresAt"] != nil {
		t.Fatalf("extend after release: %v", got)
	}
}

func TestValidationLeaseExpired(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.push("", obj{"payload": 1})
	p, ok := b.pop(valPopPath(b.queue, ""))
	if !ok {
		t.Fatal("nothing popped")
	}
	b.srv.Clock.Advance(301 * time.Second) // past the default leaseTime of 300 s
	got := b.valExtend(p.LeaseID, `{"seconds":60}`)
	want := map[string]any{"index": 0.0, "leaseId": p.LeaseID, "success": false, "error": "Lease already expired", "expiresAt": nil}
	if !valEqualJSON(got, want) {
		t.Fatalf("extend of an expired lease: %v", got)
	}
}

// ---------------------------------------------------------------------------------------------
// Router, CORS and body size

func valWantCORS(t testing.TB, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "Content-Type, Authorization",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Fatalf("%s: %q, want %q", k, got, v)
		}
	}
}

func TestValidationRouter(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, path := range []string{"/", "/api/v1", "/api/v1/nope", "/api/v1/push/", "/api/v1/pop/queue/",
		"/api/v1/pop/queue/" + b.queue + "/", "/api/v1/pop/queue/" + b.queue + "/partition/",
		"/api/v1/lease//extend", "/API/V1/PUSH", "/internal/api/push", "/api/v1/system/shared-state",
		"/api/v1/migration/status", "//api/v1/push"} {
		for _, method := range []string{"GET", "POST"} {
			r := b.valDo(method, path, nil)
			valWantError(t, r, http.StatusNotFound, "Not found")
			valWantCORS(t, r.header)
		}
	}

	wrong := []struct{ method, path, allowed string }{
		{"GET", "/api/v1/push", "POST"},
		{"PUT", "/api/v1/configure", "POST"},
		{"DELETE", "/api/v1/ack", "POST"},
		{"GET", "/api/v1/ack/batch", "POST"},
		{"GET", "/api/v1/lease/" + uuid.NewString() + "/extend", "POST"},
		{"POST", "/api/v1/pop/queue/" + b.queue, "GET"},
		{"POST", "/api/v1/pop", "GET"},
		{"POST", "/health", "GET"},
	}
	for _, c := range wrong {
		r := b.valDo(c.method, c.path, `{"items":[]}`)
		valWantError(t, r, http.StatusMethodNotAllowed, "Method not allowed")
		valWantCORS(t, r.header)
		allow := strings.Split(r.header.Get("Allow"), ", ")
		if !slices.Contains(allow, c.allowed) || slices.Contains(allow, c.method) {
			t.Fatalf("%s %s: Allow %q", c.method, c.path, r.header.Get("Allow"))
		}
	}

	for _, path := range []string{"/api/v1/push", "/api/v1/pop/queue/x", "/nowhere", "/api/v1/push/"} {
		r := b.valDo("OPTIONS", path, nil)
		valWantNoContent(t, r)
		valWantCORS(t, r.header)
		if got := r.header.Get("Access-Control-Max-Age"); got != "86400" {
			t.Fatalf("OPTIONS %s: Max-Age %q", path, got)
		}
	}

	// Normal answers carry CORS too, and no Max-Age.
	for _, r := range []valResp{
		b.valDo("POST", "/api/v1/push", obj{"items": []obj{{"queue": b.queue, "payload": 1}}}),
		b.valDo("GET", valPopPath(b.queue, ""), nil),
		b.valDo("GET", valPopPath(b.queue, ""), nil),
		b.valDo("POST", "/api/v1/push", `{}`),
		b.valDo("GET", "/health", nil),
	} {
		valWantCORS(t, r.header)
		if r.header.Get("Access-Control-Max-Age") != "" {
			t.Fatalf("Max-Age on a normal answer (%d)", r.code)
		}
	}
}

func TestValidationPushTooLarge(t *testing.T) {
	b := setup(t, testserver.Options{})
	// A valid push whose payload alone is over the limit, streamed without a length: were it
	// processed it would be a 201.
	head := `{"items":[{"queue":"` + b.queue + `","payload":"`
	tail := `"}]}`
	pad := int64(64<<20) + 1 - int64(len(head)+len(tail)) + 100
	body := io.MultiReader(strings.NewReader(head), io.LimitReader(valRepeatReader('a'), pad), strings.NewReader(tail))
	valWantError(t, b.valDo("POST", "/api/v1/push", body), http.StatusRequestEntityTooLarge, "Request body too large")
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
}

// valRepeatReader is an endless stream of one byte.
type valRepeatReader byte

func (r valRepeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// ---------------------------------------------------------------------------------------------
// small JSON helpers

// valEqualJSON compares two values after a JSON round trip, so map[string]any trees and
// structs compare by content.
func valEqualJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	na, _ := json.Marshal(va) // maps marshal with sorted keys
	nb, _ := json.Marshal(vb)
	return bytes.Equal(na, nb)
}

func valKeysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
