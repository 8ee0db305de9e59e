package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Helpers of the admin route tests (admin_*_test.go). The test database is shared by every
// test of the package, so global listings are always narrowed to this test's own queue,
// groups and trace names.

// admSetup is setup with a queue name unique to this run, so that reruns against the same
// database (-count=N) start from nothing.
func admSetup(t *testing.T, o testserver.Options) *bundle {
	b := setup(t, o)
	b.queue += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return b
}

// admMilli matches a response timestamp (docs/api/README.md §2.3: UTC, milliseconds, Z).
var admMilli = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// admUUIDv7 matches a lower-case canonical UUIDv7.
var admUUIDv7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// admJSON sends a request, requires the status and decodes the answer.
func admJSON[T any](b *bundle, want int, method, path string, body any) T {
	b.t.Helper()
	code, out := b.do(method, path, body)
	if code != want {
		b.t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
	}
	return decode[T](b.t, out)
}

// admGet is a GET that must answer 200 with a JSON object.
func admGet(b *bundle, path string) obj {
	b.t.Helper()
	return admJSON[obj](b, http.StatusOK, "GET", path, nil)
}

// admError requires the exact error answer of a request.
func admError(b *bundle, method, path string, body any, want int, wantBody string) {
	b.t.Helper()
	code, out := b.do(method, path, body)
	if code != want || !admSameJSON(out, []byte(wantBody)) {
		b.t.Fatalf("%s %s: %d %s, want %d %s", method, path, code, out, want, wantBody)
	}
}

// admSameJSON reports whether two JSON texts hold equal values.
func admSameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// admEqualJSON reports whether a decoded JSON value equals the JSON text want: a payload
// came back as it was pushed (and decrypted).
func admEqualJSON(v any, want string) bool {
	got, err := json.Marshal(v)
	return err == nil && admSameJSON(got, []byte(want))
}

// admShape requires an object to have exactly the given keys.
func admShape(t testing.TB, v any, keys ...string) obj {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %#v", v)
	}
	if got, want := slices.Sorted(maps.Keys(m)), slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v in %v", got, want, m)
	}
	return m
}

// admList returns the objects of a JSON array value.
func admList(t testing.TB, v any) []obj {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %#v", v)
	}
	out := make([]obj, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(map[string]any); !ok {
			t.Fatalf("element %d is not an object: %#v", i, e)
		}
	}
	return out
}

// admWhere keeps the objects whose field key equals value.
func admWhere(list []obj, key string, value any) []obj {
	var out []obj
	for _, o := range list {
		if o[key] == value {
			out = append(out, o)
		}
	}
	return out
}

// admField returns the string values of one field, in order.
func admField(list []obj, key string) []string {
	out := make([]string, len(list))
	for i, o := range list {
		out[i], _ = o[key].(string)
	}
	return out
}

// admTime requires a millisecond response timestamp and parses it.
func admTime(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	if !admMilli.MatchString(s) {
		t.Fatalf("timestamp %#v is not UTC with milliseconds", v)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// admNum reads a JSON number as an int64.
func admNum(t testing.TB, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("not a number: %#v", v)
	}
	return int64(f)
}

// admQuery renders query parameters, encoding timestamps as RFC 3339 with nanoseconds.
func admQuery(kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case time.Time:
			q.Set(kv[i].(string), v.UTC().Format(time.RFC3339Nano))
		default:
			q.Set(kv[i].(string), fmt.Sprint(v))
		}
	}
	return "?" + q.Encode()
}

// admPushKeys pushes one message per key into a partition of the bundle's queue, each with
// payload {"k":key}, and returns the results.
func (b *bundle) admPushKeys(partition string, keys ...string) []pushed {
	b.t.Helper()
	items := make([]obj, len(keys))
	for i, k := range keys {
		items[i] = obj{"transactionId": k, "payload": obj{"k": k}}
	}
	return b.push(partition, items...)
}

// admPop pops one partition for a group (queue mode when group is "") with batch n and
// requires messages.
func (b *bundle) admPop(partition, group string, n int) popped {
	b.t.Helper()
	path := "/api/v1/pop/queue/" + url.PathEscape(b.queue) + "/partition/" + url.PathEscape(partition) +
		admQuery("batch", n, "consumerGroup", group)
	p, ok := b.pop(path)
	if !ok {
		b.t.Fatalf("pop %s: no message", path)
	}
	return p
}

// admAckAll acks every message of a pop with one status.
func (b *bundle) admAckAll(p popped, status, group string) {
	b.t.Helper()
	for _, m := range p.Messages {
		if r := b.ack(obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID,
			"consumerGroup": group, "status": status, "error": "boom " + m.TransactionID}); !r.Success {
			b.t.Fatalf("ack %s: %+v", m.TransactionID, r)
		}
	}
}

// admKeys lists the transaction ids a pop delivered.
func admKeys(p popped) []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// admSend is a request for goroutines other than the test's own: it reports failures as a
// status of 0 instead of failing the test.
func admSend(method, url string, body any) (int, string) {
	var r io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, err.Error()
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(out)
}

// admConfigure sets the options of the bundle's queue, requiring 200.
func (b *bundle) admConfigure(options obj) {
	b.t.Helper()
	admJSON[obj](b, http.StatusOK, "POST", "/api/v1/configure", obj{"queue": b.queue, "options": options})
}
