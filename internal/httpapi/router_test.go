package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testRouter registers a slice of the real route table, including the pairs
// where static segments must win over parameters.
func testRouter() *Router {
	r := NewRouter()
	echo := func(names ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			out := map[string]any{"route": req.Method + " " + req.Pattern, "level": RouteLevel(req).String()}
			for _, n := range names {
				out[n] = PathParam(req, n)
			}
			writeJSON(w, http.StatusOK, out)
		}
	}
	reg := func(method, pattern string, level Level, names ...string) {
		h := echo(names...)
		r.Handle(method, pattern, level, func(w http.ResponseWriter, req *http.Request) {
			req.Pattern = pattern // lets the echo say which route answered
			h(w, req)
		})
	}
	reg("GET", "/health", LevelPublic)
	reg("POST", "/api/v1/push", LevelReadWrite)
	reg("GET", "/api/v1/pop/queue/:queue", LevelReadWrite, "queue")
	reg("GET", "/api/v1/pop/queue/:queue/partition/:partition", LevelReadWrite, "queue", "partition")
	reg("GET", "/api/v1/resources/queues/:queue", LevelReadOnly, "queue")
	reg("DELETE", "/api/v1/resources/queues/:queue", LevelAdmin, "queue")
	reg("GET", "/api/v1/traces/names", LevelReadOnly)
	reg("GET", "/api/v1/traces/by-name/:traceName", LevelReadOnly, "traceName")
	reg("GET", "/api/v1/traces/:partitionId/:transactionId", LevelReadOnly, "partitionId", "transactionId")
	reg("GET", "/api/v1/consumer-groups/lagging", LevelReadOnly)
	reg("GET", "/api/v1/consumer-groups/:group", LevelReadOnly, "group")
	reg("DELETE", "/api/v1/consumer-groups/:group", LevelAdmin, "group")
	reg("POST", "/api/v1/consumer-groups/:group/subscription", LevelReadWrite, "group")
	reg("GET", "/api/v1/system/maintenance", LevelAdmin)
	reg("POST", "/api/v1/system/maintenance", LevelAdmin)
	return r
}

func TestRouterMatching(t *testing.T) {
	r := testRouter()
	tests := []struct {
		method, target string
		status         int
		want           map[string]string // expected JSON fields
		allow          string
	}{
		{"GET", "/health", 200, map[string]string{"route": "GET /health", "level": "public"}, ""},
		{"POST", "/api/v1/push", 200, map[string]string{"level": "read-write"}, ""},
		{"GET", "/api/v1/pop/queue/orders", 200, map[string]string{"route": "GET /api/v1/pop/queue/:queue", "queue": "orders"}, ""},
		{"GET", "/api/v1/pop/queue/a%2Fb", 200, map[string]string{"queue": "a/b"}, ""},
		{"GET", "/api/v1/pop/queue/a%2Fb/partition/p%201", 200, map[string]string{"queue": "a/b", "partition": "p 1"}, ""},
		{"GET", "/api/v1/pop/queue/a+b", 200, map[string]string{"queue": "a+b"}, ""},
		{"GET", "/api/v1/pop/queue/%E2%9C%93", 200, map[string]string{"queue": "✓"}, ""},
		{"GET", "/api/v1/pop/queue/q?x=%2F", 200, map[string]string{"queue": "q"}, ""},
		{"GET", "/api/v1/resources/queues/q1", 200, map[string]string{"level": "read-only", "queue": "q1"}, ""},
		{"DELETE", "/api/v1/resources/queues/q1", 200, map[string]string{"level": "admin", "queue": "q1"}, ""},
		// Static segments win over parameters.
		{"GET", "/api/v1/traces/names", 200, map[string]string{"route": "GET /api/v1/traces/names"}, ""},
		{"GET", "/api/v1/traces/by-name/t1", 200, map[string]string{"route": "GET /api/v1/traces/by-name/:traceName", "traceName": "t1"}, ""},
		{"GET", "/api/v1/traces/p1/tx1", 200, map[string]string{"partitionId": "p1", "transactionId": "tx1"}, ""},
		{"GET", "/api/v1/traces/names/tx1", 200, map[string]string{"partitionId": "names", "transactionId": "tx1"}, ""},
		{"GET", "/api/v1/consumer-groups/lagging", 200, map[string]string{"route": "GET /api/v1/consumer-groups/lagging"}, ""},
		{"GET", "/api/v1/consumer-groups/g1", 200, map[string]string{"group": "g1"}, ""},
		{"GET", "/api/v1/consumer-groups/laggin%67", 200, map[string]string{"route": "GET /api/v1/consumer-groups/lagging"}, ""},
		{"GET", "/api/v1/consumer-groups/lagging%2Fx", 200, map[string]string{"group": "lagging/x"}, ""},
		// The static branch cannot finish this path, so the parameter takes it.
		{"POST", "/api/v1/consumer-groups/lagging/subscription", 200, map[string]string{"group": "lagging"}, ""},
		// The path picks the route before the method does.
		{"DELETE", "/api/v1/consumer-groups/lagging", 405, map[string]string{"error": "Method not allowed"}, "GET, HEAD, OPTIONS"},
		{"GET", "/api/v1/push", 405, map[string]string{"error": "Method not allowed"}, "POST, OPTIONS"},
		{"PUT", "/api/v1/resources/queues/q1", 405, map[string]string{"error": "Method not allowed"}, "DELETE, GET, HEAD, OPTIONS"},
		// A pop is a GET that leases messages: HEAD is not offered there (it must be safe).
		{"HEAD", "/api/v1/pop/queue/q", 405, map[string]string{"error": "Method not allowed"}, "GET, OPTIONS"},
		{"PATCH", "/api/v1/system/maintenance", 405, nil, "GET, HEAD, POST, OPTIONS"},
		// Exact matching.
		{"POST", "/api/v1/push/", 404, map[string]string{"error": "Not found"}, ""},
		{"GET", "/api/v1/pop/queue/", 404, map[string]string{"error": "Not found"}, ""},
		{"GET", "/api/v1/pop/queue//partition/p", 404, nil, ""},
		{"GET", "/api/v1/pop/queue", 404, nil, ""},
		{"GET", "//health", 404, nil, ""},
		{"GET", "/health/", 404, nil, ""},
		{"GET", "/Health", 404, nil, ""},
		{"GET", "/", 404, nil, ""},
		{"GET", "/api/v1/pu%2Fsh", 404, nil, ""},
		{"GET", "/internal/api", 404, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			checkCORS(t, rec.Header())
			var got map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (body %s)", k, got[k], v, rec.Body)
				}
			}
		})
	}
}

func checkCORS(t *testing.T, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "Content-Type, Authorization",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestRouterOptions(t *testing.T) {
	r := testRouter()
	for _, target := range []string{"/health", "/api/v1/push", "/api/v1/push/", "/nowhere", "/api/v1/pop/queue/a%2Fb"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("OPTIONS", target, nil))
		if rec.Code != http.StatusNoContent {
			t.Errorf("OPTIONS %s: status %d", target, rec.Code)
		}
		if rec.Body.Len() != 0 {
			t.Errorf("OPTIONS %s: body %q", target, rec.Body)
		}
		if got := rec.Header().Get("Access-Control-Max-Age"); got != "86400" {
			t.Errorf("OPTIONS %s: Max-Age %q", target, got)
		}
		checkCORS(t, rec.Header())
	}
}

func TestRouterNoMaxAgeOutsideOptions(t *testing.T) {
	rec := httptest.NewRecorder()
	testRouter().ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
	if got := rec.Header().Get("Access-Control-Max-Age"); got != "" {
		t.Errorf("Max-Age on GET: %q", got)
	}
}

func TestRouterMiddleware(t *testing.T) {
	r := NewRouter()
	var order []string
	r.Handle("GET", "/a/:x", LevelReadWrite, func(w http.ResponseWriter, req *http.Request) {
		order = append(order, "handler")
		w.WriteHeader(http.StatusNoContent)
	})
	mw := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				order = append(order, name+":"+RouteLevel(req).String()+":"+PathParam(req, "x"))
				next.ServeHTTP(w, req)
			})
		}
	}
	r.Use(mw("outer"))
	r.Use(mw("inner"))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/a/v", nil))
	want := "outer:read-write:v,inner:read-write:v,handler"
	if got := strings.Join(order, ","); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	order = nil
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/b", nil))
	if len(order) != 0 {
		t.Errorf("middleware ran for 404: %v", order)
	}
}

func TestRouterPanicRecovery(t *testing.T) {
	r := NewRouter()
	r.Handle("GET", "/boom", LevelPublic, func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "kaboom") {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	checkCORS(t, rec.Header())
}

func TestRouteInfoOutsideRouter(t *testing.T) {
	req := httptest.NewRequest("GET", "/x", nil)
	if got := RouteLevel(req); got != LevelAdmin {
		t.Errorf("RouteLevel = %v, want admin (fail closed)", got)
	}
	if got := PathParam(req, "x"); got != "" {
		t.Errorf("PathParam = %q", got)
	}
}

func TestHandlePanicsOnMisuse(t *testing.T) {
	h := func(http.ResponseWriter, *http.Request) {}
	tests := []struct {
		name            string
		method, pattern string
	}{
		{"duplicate", "GET", "/a/:x"},
		{"no slash", "GET", "a"},
		{"empty param", "GET", "/a/:"},
		{"repeated param", "GET", "/b/:x/:x"},
		{"options", "OPTIONS", "/c"},
		{"no method", "", "/d"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter()
			r.Handle("GET", "/a/:y", LevelPublic, h)
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q, %q) did not panic", tc.method, tc.pattern)
				}
			}()
			r.Handle(tc.method, tc.pattern, LevelPublic, h)
		})
	}
}

// TestRouterHead checks that HEAD on a safe GET answers like the GET without a body, and that
// a HEAD registered by hand is not overwritten.
func TestRouterHead(t *testing.T) {
	r := testRouter()
	for _, target := range []string{"/health", "/api/v1/resources/queues/q1", "/api/v1/system/maintenance"} {
		get, head := httptest.NewRecorder(), httptest.NewRecorder()
		r.ServeHTTP(get, httptest.NewRequest("GET", target, nil))
		r.ServeHTTP(head, httptest.NewRequest("HEAD", target, nil))
		if head.Code != get.Code || head.Code != http.StatusOK {
			t.Errorf("HEAD %s: %d, GET %d", target, head.Code, get.Code)
		}
		if head.Body.Len() != 0 {
			t.Errorf("HEAD %s: body %q", target, head.Body)
		}
		if got, want := head.Header().Get("Content-Type"), get.Header().Get("Content-Type"); got != want {
			t.Errorf("HEAD %s: Content-Type %q, GET %q", target, got, want)
		}
	}
	r.Handle("HEAD", "/own", LevelPublic, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	r.Handle("GET", "/own", LevelPublic, func(w http.ResponseWriter, _ *http.Request) {})
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("HEAD", "/own", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("HEAD registered by hand: %d", rec.Code)
	}
}
