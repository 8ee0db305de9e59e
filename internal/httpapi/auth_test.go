package httpapi_test

// Authentication over real HTTP (docs/api/README.md §2.8, docs/api/operations.md §6, docs/api/transaction.md claims 49 and
// 51). Helpers here are prefixed auth.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/testserver"
)

const authSecret = "auth-test-secret"

// authToken signs claims with the test servers' HS256 secret.
func authToken(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(authSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// authRole is a token with sub and one role in the string claim.
func authRole(t testing.TB, sub, role string) string {
	return authToken(t, jwt.MapClaims{"sub": sub, "role": role, "exp": time.Now().Add(time.Hour).Unix()})
}

// authSend sends a request with an Authorization header (none when authz is nil) and returns
// the response with its body read.
func authSend(t testing.TB, method, url string, authz *string, body any) (*http.Response, []byte) {
	t.Helper()
	var h http.Header
	if authz != nil {
		h = http.Header{"Authorization": {*authz}}
	}
	resp, out, err := roundTrip(context.Background(), http.DefaultClient, method, url, body, h)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

func bearer(tok string) *string { s := "Bearer " + tok; return &s }

// authWant requires status and, when msg is not empty, the body {"error":msg} exactly.
func authWant(t testing.TB, resp *http.Response, body []byte, status int, msg string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, body, status, msg)
	}
	if msg != "" {
		want, _ := json.Marshal(map[string]string{"error": msg})
		if strings.TrimSpace(string(body)) != string(want) {
			t.Fatalf("body %s, want %s", body, want)
		}
	}
}

// authPopped is the part of a pop answer these tests look at.
type authPopped struct {
	Messages []struct {
		TransactionID string          `json:"transactionId"`
		ProducerSub   *string         `json:"producerSub"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

// authPopSubs pops up to 10 messages of queue and returns their producerSub values by
// transactionId ("<null>" for null); an empty queue gives an empty map.
func authPopSubs(t testing.TB, base, queue string, authz *string) map[string]string {
	t.Helper()
	resp, body := authSend(t, "GET", base+"/api/v1/pop/queue/"+url.PathEscape(queue)+"?batch=10&wait=false", authz, nil)
	out := map[string]string{}
	if resp.StatusCode == http.StatusNoContent {
		return out
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pop: %d %s", resp.StatusCode, body)
	}
	for _, m := range decode[authPopped](t, body).Messages {
		out[m.TransactionID] = "<null>"
		if m.ProducerSub != nil {
			out[m.TransactionID] = *m.ProducerSub
		}
	}
	return out
}

// authSetup starts a broker with authentication on (HS256 with authSecret unless o.Auth says
// otherwise). The queue name is made unique per run so that -count=N reruns against the same
// database do not meet the previous run's messages and dedup keys.
func authSetup(t *testing.T, o testserver.Options) *bundle {
	if o.Auth == nil {
		o.JWTSecret = authSecret
	}
	b := setup(t, o)
	b.queue += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return b
}

func TestAuthTokenRequiredAndLevels(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	push := b.srv.URL + "/api/v1/push"
	item := obj{"items": []obj{{"queue": b.queue, "payload": 1}}}

	resp, body := authSend(t, "POST", push, nil, item)
	authWant(t, resp, body, 401, "Authentication required")
	if resp.Header.Get("WWW-Authenticate") != "Bearer" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("headers %v", resp.Header)
	}
	for authz, msg := range map[string]string{
		"":                 "Empty token",
		"Bearer":           "Empty token",
		"Bearer not-a-jwt": "Invalid token",
		"Bearer " + authToken(t, jwt.MapClaims{"role": "admin", "exp": time.Now().Add(-time.Hour).Unix()}): "Token has expired",
	} {
		resp, body := authSend(t, "POST", push, &authz, item)
		authWant(t, resp, body, 401, msg)
	}

	// Roles below the route's level: 403.
	for _, role := range []string{"read-only", "", "superuser"} {
		resp, body := authSend(t, "POST", push, bearer(authRole(t, "u", role)), item)
		authWant(t, resp, body, 403, "Insufficient permissions")
	}
	// read-write and admin reach read-write routes; the prefix is case-insensitive and optional.
	bare := authRole(t, "u", "admin")
	for _, authz := range []*string{bearer(authRole(t, "u", "read-write")), bearer(bare), &bare} {
		resp, body := authSend(t, "POST", push, authz, item)
		authWant(t, resp, body, 201, "")
	}
	lower := "bearer " + authRole(t, "u", "read-write")
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/pop/queue/"+b.queue+"?batch=10&wait=false", &lower, nil)
	authWant(t, resp, body, 200, "")
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/pop/queue/"+b.queue+"?wait=false", bearer(authRole(t, "u", "read-only")), nil)
	authWant(t, resp, body, 403, "Insufficient permissions")
}

func TestAuthPublicRoutesNeedNoToken(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	resp, body := authSend(t, "OPTIONS", b.srv.URL+"/api/v1/push", nil, nil)
	authWant(t, resp, body, 204, "")
	resp, body = authSend(t, "GET", b.srv.URL+"/health", nil, nil)
	authWant(t, resp, body, 200, "")
	// A bad token on a public route is not even looked at.
	junk := "Bearer junk"
	resp, body = authSend(t, "GET", b.srv.URL+"/health", &junk, nil)
	authWant(t, resp, body, 200, "")
	// Unknown paths and wrong methods keep their own answers.
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/nope", nil, nil)
	authWant(t, resp, body, 404, "Not found")
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/push", nil, nil)
	authWant(t, resp, body, 405, "Method not allowed")
}

func TestAuthSkipPaths(t *testing.T) {
	b := authSetup(t, testserver.Options{Auth: &auth.Config{Algorithm: "HS256", Secret: authSecret,
		SkipPaths: []string{"/api/v1/push", "/api/v1/pop/"}}})
	item := obj{"items": []obj{{"queue": b.queue, "payload": 1, "transactionId": "anon"}}}
	resp, body := authSend(t, "POST", b.srv.URL+"/api/v1/push", nil, item)
	authWant(t, resp, body, 201, "")
	// A valid token on a skipped path still names the producer; a bad one is not rejected.
	item = obj{"items": []obj{{"queue": b.queue, "payload": 2, "transactionId": "named"}}}
	resp, body = authSend(t, "POST", b.srv.URL+"/api/v1/push", bearer(authRole(t, "skipper", "read-only")), item)
	authWant(t, resp, body, 201, "")
	junk := "Bearer junk"
	resp, body = authSend(t, "POST", b.srv.URL+"/api/v1/push", &junk,
		obj{"items": []obj{{"queue": b.queue, "payload": 3, "transactionId": "junk"}}})
	authWant(t, resp, body, 201, "")

	// "/api/v1/pop/" covers everything below it, without a token...
	subs := authPopSubs(t, b.srv.URL, b.queue, nil)
	if subs["anon"] != "<null>" || subs["named"] != "skipper" || subs["junk"] != "<null>" {
		t.Fatalf("producerSub by key %v", subs)
	}
	// ... but not /api/v1/pop itself, nor other routes.
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/pop?namespace=x&wait=false", nil, nil)
	authWant(t, resp, body, 401, "Authentication required")
	resp, body = authSend(t, "POST", b.srv.URL+"/api/v1/ack", nil, obj{})
	authWant(t, resp, body, 401, "Authentication required")
}

func TestAuthDecidedBeforeBody(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	for _, path := range []string{"/api/v1/push", "/api/v1/transaction", "/api/v1/ack", "/api/v1/configure"} {
		resp, body := authSend(t, "POST", b.srv.URL+path, nil, "{not json")
		authWant(t, resp, body, 401, "Authentication required")
		resp, body = authSend(t, "POST", b.srv.URL+path, bearer(authRole(t, "u", "read-only")), "{not json")
		authWant(t, resp, body, 403, "Insufficient permissions")
		resp, body = authSend(t, "POST", b.srv.URL+path, bearer(authRole(t, "u", "read-write")), "{not json")
		if resp.StatusCode != 400 {
			t.Fatalf("%s with a token: %d %s, want 400", path, resp.StatusCode, body)
		}
	}

	t.Run("declared length over the limit", func(t *testing.T) {
		// A few MiB of a body that claims 100 MiB: the answer needs none of it.
		u, _ := url.Parse(b.srv.URL)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			u.Host, 100<<20)
		go func() {
			_, _ = conn.Write(bytes.Repeat([]byte("x"), 4<<20))
			_ = conn.(*net.TCPConn).CloseWrite()
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Request = &http.Request{Method: "POST", URL: &url.URL{Path: "/api/v1/push"}}
		authWant(t, resp, body, 401, "Authentication required")
	})

	t.Run("whole body over the limit", func(t *testing.T) {
		// A client that writes its whole (oversized) body before reading still gets the 401.
		n := int64(httpapi.MaxBodyBytes + 1)
		req, _ := http.NewRequest("POST", b.srv.URL+"/api/v1/transaction", io.LimitReader(zeros{}, n))
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+authRole(t, "u", "read-only"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		authWant(t, resp, body, 403, "Insufficient permissions")
	})
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestAuthPushStampsProducerSub(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	push := func(tok, key string) {
		t.Helper()
		item := obj{"queue": b.queue, "payload": obj{"k": key}, "transactionId": key, "producerSub": "forged"}
		resp, body := authSend(t, "POST", b.srv.URL+"/api/v1/push", bearer(tok), obj{"items": []obj{item}})
		authWant(t, resp, body, 201, "")
	}
	push(authRole(t, "svc-orders", "read-write"), "with-sub")
	push(authToken(t, jwt.MapClaims{"roles": []string{"read-write"}}), "without-sub")
	subs := authPopSubs(t, b.srv.URL, b.queue, bearer(authRole(t, "consumer", "read-write")))
	if len(subs) != 2 || subs["with-sub"] != "svc-orders" || subs["without-sub"] != "<null>" {
		t.Fatalf("producerSub by key %v", subs)
	}
}

func TestAuthOffProducerSubIsNull(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.queue += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// A token sent to a broker without authentication is ignored, as is a body producerSub.
	item := obj{"queue": b.queue, "payload": 1, "transactionId": "k", "producerSub": "forged"}
	resp, body := authSend(t, "POST", b.srv.URL+"/api/v1/push", bearer(authRole(t, "x", "read-write")), obj{"items": []obj{item}})
	authWant(t, resp, body, 201, "")
	if subs := authPopSubs(t, b.srv.URL, b.queue, nil); subs["k"] != "<null>" {
		t.Fatalf("producerSub by key %v", subs)
	}
}

// TestTxnClaim49_AuthNoTokenReadOnlyReadWrite: with auth on, no token 401, a read-only token
// 403 Insufficient permissions, a read-write token 200.
func TestTxnClaim49_AuthNoTokenReadOnlyReadWrite(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	txn := b.srv.URL + "/api/v1/transaction"
	bundle := obj{"operations": []obj{{"type": "push", "queue": b.queue, "payload": 1, "transactionId": "c49"}}}
	resp, body := authSend(t, "POST", txn, nil, bundle)
	authWant(t, resp, body, 401, "Authentication required")
	resp, body = authSend(t, "POST", txn, bearer(authRole(t, "ro", "read-only")), bundle)
	authWant(t, resp, body, 403, "Insufficient permissions")
	// Neither rejected call wrote anything.
	if subs := authPopSubs(t, b.srv.URL, b.queue, bearer(authRole(t, "rw", "read-write"))); len(subs) != 0 {
		t.Fatalf("rejected transactions wrote %v", subs)
	}
	resp, body = authSend(t, "POST", txn, bearer(authRole(t, "rw", "read-write")), bundle)
	authWant(t, resp, body, 200, "")
	if ans := decode[map[string]any](t, body); ans["success"] != true {
		t.Fatalf("answer %s", body)
	}
}

// TestTxnClaim51_TransactionPushCarriesTokenSub: with auth on, messages pushed by a
// transaction carry the token's sub as producerSub; a body producerSub is ignored.
func TestTxnClaim51_TransactionPushCarriesTokenSub(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	bundle := obj{"operations": []obj{
		{"type": "push", "queue": b.queue, "payload": 1, "transactionId": "flat", "producerSub": "forged"},
		{"type": "push", "items": []obj{{"queue": b.queue, "payload": 2, "transactionId": "nested", "producerSub": "forged"}}},
	}}
	resp, body := authSend(t, "POST", b.srv.URL+"/api/v1/transaction", bearer(authRole(t, "pipeline-7", "read-write")), bundle)
	authWant(t, resp, body, 200, "")
	if ans := decode[map[string]any](t, body); ans["success"] != true {
		t.Fatalf("answer %s", body)
	}
	subs := authPopSubs(t, b.srv.URL, b.queue, bearer(authRole(t, "reader", "admin")))
	if len(subs) != 2 || subs["flat"] != "pipeline-7" || subs["nested"] != "pipeline-7" {
		t.Fatalf("producerSub by key %v", subs)
	}
}

// TestAuthAdminRoutes checks the admin level on the broker's own admin routes: read-write is not
// enough, admin is. Only the authentication outcome is asserted; the routes' answers are
// tested with their handlers.
func TestAuthAdminRoutes(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	del := b.srv.URL + "/api/v1/resources/queues/" + b.queue
	resp, body := authSend(t, "DELETE", del, bearer(authRole(t, "rw", "read-write")), nil)
	authWant(t, resp, body, 403, "Insufficient permissions")
	resp, body = authSend(t, "DELETE", del, nil, nil)
	authWant(t, resp, body, 401, "Authentication required")
	resp, body = authSend(t, "DELETE", del, bearer(authRole(t, "root", "admin")), nil)
	if resp.StatusCode == 401 || resp.StatusCode == 403 {
		t.Fatalf("admin DELETE: %d %s", resp.StatusCode, body)
	}
	// Read-only reaches the read-only listing.
	resp, body = authSend(t, "GET", b.srv.URL+"/api/v1/resources/queues", bearer(authRole(t, "ro", "read-only")), nil)
	if resp.StatusCode == 401 || resp.StatusCode == 403 {
		t.Fatalf("read-only GET: %d %s", resp.StatusCode, body)
	}
}
