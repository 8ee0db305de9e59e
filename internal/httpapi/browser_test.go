package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// browserDo sends one request as a browser would from origin (none when ""), naming host in
// Host (the server's address when "").
func browserDo(t *testing.T, method, url, host, origin, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, out, err := roundTripReq(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, string(out)
}

func roundTripReq(req *http.Request) (*http.Response, []byte, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// An open broker (no authentication) refuses what a page of another origin sends, before any
// work: the queue it tries to delete stays, the message it pushes as a "simple" text/plain
// request (which a browser sends without a preflight) is not stored, and its preflights get no
// Access-Control-Allow-* headers. A page of a CORS_ALLOWED_ORIGINS origin, the broker's own
// pages (the dashboard) and clients (no Origin) are served as before.
func TestOpenBrokerRefusesForeignOrigins(t *testing.T) {
	const listed = "http://app.example.test:3000"
	b := setup(t, testserver.Options{Env: map[string]string{"CORS_ALLOWED_ORIGINS": listed + "/"}})
	b.push("p", obj{"payload": obj{"n": 1}})
	queueURL := b.srv.URL + "/api/v1/resources/queues/" + b.queue
	pushBody := `{"items":[{"queue":"` + b.queue + `","partition":"p","payload":{"from":"page"}}]}`

	resp, body := browserDo(t, "DELETE", queueURL, "", "https://evil.example", "", "")
	if resp.StatusCode != http.StatusForbidden || body != `{"error":"Origin not allowed"}` && body != `{"error":"Origin not allowed"}`+"\n" {
		t.Fatalf("foreign DELETE: %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("foreign DELETE answered with Access-Control-Allow-Origin %q", got)
	}
	resp, body = browserDo(t, "POST", b.srv.URL+"/api/v1/push", "", "https://evil.example", "text/plain", pushBody)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign simple POST push: %d %s", resp.StatusCode, body)
	}
	resp, _ = browserDo(t, "GET", b.srv.URL+"/api/v1/resources/queues", "", "https://evil.example", "", "")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign read: %d", resp.StatusCode)
	}
	resp, _ = browserDo(t, "OPTIONS", queueURL, "", "https://evil.example", "", "")
	if resp.Header.Get("Access-Control-Allow-Methods") != "" || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign preflight got CORS headers: %v", resp.Header)
	}
	// Nothing happened: the queue is there with its one message.
	if code, out := b.do("GET", "/api/v1/resources/queues/"+b.queue, nil); code != http.StatusOK {
		t.Fatalf("queue after the foreign DELETE: %d %s", code, out)
	}
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&wait=false&autoAck=true"); !ok || len(p.Messages) != 1 {
		t.Fatalf("after the foreign push the queue holds %+v (ok %v), want the one message pushed before", p, ok)
	}

	// A client (no Origin) and the broker's own page work as before.
	resp, body = browserDo(t, "POST", b.srv.URL+"/api/v1/push", "", "", "application/json", pushBody)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("client push: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	own := "http://" + strings.TrimPrefix(b.srv.URL, "http://")
	resp, body = browserDo(t, "POST", b.srv.URL+"/api/v1/push", "", own, "application/json", pushBody)
	if resp.StatusCode >= 300 || resp.Header.Get("Access-Control-Allow-Origin") != own {
		t.Fatalf("own page's push: %d %s %v", resp.StatusCode, body, resp.Header)
	}

	// The listed origin: preflight approved, then the DELETE goes through.
	resp, _ = browserDo(t, "OPTIONS", queueURL, "", listed, "", "")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != listed ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Fatalf("listed preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = browserDo(t, "DELETE", queueURL, "", listed, "", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != listed {
		t.Fatalf("listed DELETE: %d %s", resp.StatusCode, body)
	}
	if code, _ := b.do("GET", "/api/v1/resources/queues/"+b.queue, nil); code != http.StatusNotFound {
		t.Fatalf("queue after the listed DELETE: %d, want 404", code)
	}
}

// A broker that listens on loopback only answers 421 to a Host naming another machine: what a
// page whose name was rebound to 127.0.0.1 sends (DNS rebinding), same-origin as far as the
// browser knows.
func TestLoopbackBrokerRefusesReboundHosts(t *testing.T) {
	b := setup(t, testserver.Options{Env: map[string]string{"HOST": "127.0.0.1"}})
	port := b.srv.URL[strings.LastIndex(b.srv.URL, ":")+1:]
	rebound := "rebind.evil.example:" + port
	resp, body := browserDo(t, "DELETE", b.srv.URL+"/api/v1/resources/queues/"+b.queue, rebound, "http://"+rebound, "", "")
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(body, "Host not allowed") {
		t.Fatalf("rebound host: %d %s", resp.StatusCode, body)
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		if resp, body := browserDo(t, "GET", b.srv.URL+"/health", host, "", "", ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("Host %s: %d %s", host, resp.StatusCode, body)
		}
	}
}

// With authentication on, tokens gate every write, so any origin may call the broker, as with
// Queen (Access-Control-Allow-Origin: *); the token is what is checked.
func TestAuthOnKeepsAnyOrigin(t *testing.T) {
	b := setup(t, testserver.Options{JWTSecret: "browser-test-secret"})
	resp, _ := browserDo(t, "GET", b.srv.URL+"/api/v1/resources/queues", "", "https://evil.example", "", "")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("foreign page without a token: %d, ACAO %q; want 401 with *", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
