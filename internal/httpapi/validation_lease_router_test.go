package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testserver"
)

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
	b := fakeSetup(t)
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
	// "/" is the dashboard's (TestDashboardServedByTheBroker).
	for _, path := range []string{"/api/v1", "/api/v1/nope", "/api/v1/push/", "/api/v1/pop/queue/",
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
