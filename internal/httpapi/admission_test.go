package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The admission rules one by one, on the router alone (no database): which Origin and Host
// headers pass, what a refused request gets, and which CORS headers go with each answer.
func TestAdmissionRules(t *testing.T) {
	const listed = "https://app.example.com"
	open := newAdmission(false, []string{listed}, nil, "0.0.0.0")
	loopback := newAdmission(false, nil, nil, "127.0.0.1")
	named := newAdmission(false, nil, []string{"queen.internal", ".svc.example"}, "0.0.0.0")
	authOn := newAdmission(true, nil, nil, "127.0.0.1")
	star := newAdmission(false, []string{"*"}, nil, "0.0.0.0")
	for _, tc := range []struct {
		name       string
		a          *admission
		method     string
		host       string
		origin     string
		wantStatus int    // 0: admitted
		wantACAO   string // Access-Control-Allow-Origin of the answer
	}{
		{"no Origin: a client, not a page", open, "DELETE", "broker:6632", "", 0, "*"},
		{"the broker's own page (the dashboard)", open, "DELETE", "broker:6632", "http://broker:6632", 0, "http://broker:6632"},
		{"own page, default port on one side", open, "POST", "broker", "http://broker:80", 0, "http://broker:80"},
		{"own host, other port", open, "DELETE", "broker:6632", "http://broker:8080", http.StatusForbidden, ""},
		{"own host and port, https page", open, "DELETE", "broker:6632", "https://broker:6632", 0, "https://broker:6632"},
		{"a listed origin", open, "DELETE", "broker:6632", listed, 0, listed},
		{"a listed origin in other case", open, "POST", "broker:6632", "HTTPS://App.Example.com", 0, "HTTPS://App.Example.com"},
		{"a foreign page", open, "DELETE", "broker:6632", "https://evil.example", http.StatusForbidden, ""},
		{"a foreign page reading", open, "GET", "broker:6632", "https://evil.example", http.StatusForbidden, ""},
		{"a foreign page's preflight", open, "OPTIONS", "broker:6632", "https://evil.example", http.StatusForbidden, ""},
		{"a sandboxed frame or a file", open, "POST", "broker:6632", "null", http.StatusForbidden, ""},
		{"a listed page's preflight", open, "OPTIONS", "broker:6632", listed, 0, listed},
		{"* allows any page", star, "DELETE", "broker:6632", "https://evil.example", 0, "*"},
		{"auth on keeps Queen's *", authOn, "DELETE", "localhost:6632", "https://evil.example", 0, "*"},
		{"loopback: localhost", loopback, "GET", "localhost:6632", "", 0, "*"},
		{"loopback: an IP address", loopback, "GET", "127.0.0.1:6632", "", 0, "*"},
		{"loopback: IPv6", loopback, "GET", "[::1]:6632", "", 0, "*"},
		{"loopback: a rebound name", loopback, "DELETE", "rebind.evil.example:6632", "http://rebind.evil.example:6632", http.StatusMisdirectedRequest, ""},
		{"loopback: a rebound name without Origin", loopback, "GET", "rebind.evil.example:6632", "", http.StatusMisdirectedRequest, ""},
		{"auth on: the Host check stays", authOn, "GET", "rebind.evil.example:6632", "", http.StatusMisdirectedRequest, ""},
		{"not loopback, no ALLOWED_HOSTS: any host", open, "GET", "anything.example:6632", "", 0, "*"},
		{"ALLOWED_HOSTS: a listed name", named, "GET", "queen.internal:6632", "", 0, "*"},
		{"ALLOWED_HOSTS: a subdomain", named, "GET", "q.ns.svc.example", "", 0, "*"},
		{"ALLOWED_HOSTS: the domain itself", named, "GET", "svc.example", "", 0, "*"},
		{"ALLOWED_HOSTS: a pod IP (a probe)", named, "GET", "10.1.2.3:6632", "", 0, "*"},
		{"ALLOWED_HOSTS: another name", named, "GET", "evil.example", "", http.StatusMisdirectedRequest, ""},
		{"ALLOWED_HOSTS: a lookalike suffix", named, "GET", "evilsvc.example", "", http.StatusMisdirectedRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter()
			r.admission = tc.a
			reached := false
			for _, m := range []string{"GET", "POST", "DELETE"} {
				r.Handle(m, "/x", LevelPublic, func(w http.ResponseWriter, _ *http.Request) {
					reached = true
					w.WriteHeader(http.StatusOK)
				})
			}
			req := httptest.NewRequest(tc.method, "http://"+tc.host+"/x", nil)
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			h := w.Result().Header
			if got := h.Get("Access-Control-Allow-Origin"); got != tc.wantACAO {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.wantACAO)
			}
			if tc.wantStatus != 0 {
				if w.Code != tc.wantStatus || reached {
					t.Fatalf("status %d (handler reached: %v), want %d before the handler", w.Code, reached, tc.wantStatus)
				}
				want := map[int]string{http.StatusForbidden: `{"error":"Origin not allowed"}`,
					http.StatusMisdirectedRequest: `{"error":"Host not allowed"}`}[tc.wantStatus]
				if body := w.Body.String(); body != want+"\n" && body != want {
					t.Fatalf("body %q, want %s", body, want)
				}
				if h.Get("Access-Control-Allow-Methods") != "" {
					t.Fatal("a refused request got Access-Control-Allow-Methods")
				}
				return
			}
			if tc.method == "OPTIONS" {
				if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Methods") != corsMethods {
					t.Fatalf("preflight: %d, methods %q", w.Code, h.Get("Access-Control-Allow-Methods"))
				}
				return
			}
			if w.Code != http.StatusOK || !reached {
				t.Fatalf("status %d, handler reached %v: want the handler's 200", w.Code, reached)
			}
		})
	}
}

// A router built without a policy (NewRouter's default, used by tools and tests of the wire
// layer) admits everything with §2.7's fixed headers.
func TestRouterWithoutAdmissionAdmitsAll(t *testing.T) {
	r := NewRouter()
	r.Handle("DELETE", "/x", LevelPublic, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	req := httptest.NewRequest("DELETE", "http://evil.example/x", nil)
	req.Header.Set("Origin", "https://evil.example")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("status %d, ACAO %q", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
}
