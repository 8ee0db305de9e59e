package httpapi_test

// Limits per tenant over real HTTP (docs/api/concepts.md §14): each limit at its boundary, with
// the 429 and nothing written (checked in the database); a limit raised at run time; many
// goroutines racing for the last places; who may read and set the limits.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/testserver"
)

// limitsAdmin is a client with an admin token of the default tenant: the broker's administrator.
func limitsAdmin(t *testing.T, srv *testserver.Server) tenantClient {
	return tenantClient{t, srv.URL, "Bearer " + tenantToken(t, nil, "admin"), ""}
}

// setLimits stores tenant's limits through the admin route.
func setLimits(t *testing.T, admin tenantClient, tenant string, limits obj) {
	t.Helper()
	if code, body := admin.do("PUT", "/api/v1/system/tenants/"+tenant+"/limits", limits); code != http.StatusOK {
		t.Fatalf("PUT limits of %s %v: %d %s", tenant, limits, code, body)
	}
}

// wantLimit checks a 429 naming the limit, with a Retry-After of at least one second.
func wantLimit(t *testing.T, what string, resp *http.Response, body []byte, text string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `{"error":"`+text+`"}`) {
		t.Fatalf("%s: %d %s, want 429 %q", what, resp.StatusCode, body, text)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("%s: Retry-After %q", what, ra)
	}
}

// sendFull is send with the response, for its headers.
func (c tenantClient) sendFull(method, path string, body any) (*http.Response, []byte) {
	c.t.Helper()
	resp, out, err := roundTrip(context.Background(), http.DefaultClient, method, c.url+path, body,
		http.Header{"Authorization": {c.authz}})
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, out
}

// tenantCount runs a count over the package database.
func tenantCount(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := stateDB(t).QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func queuesOf(t *testing.T, tenant string) int {
	return tenantCount(t, `SELECT count(*) FROM queue_rows WHERE tenant = $1`, tenant)
}

func messagesOf(t *testing.T, tenant string) int {
	return tenantCount(t, `SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id
		JOIN queue_rows q ON q.id = p.queue_id WHERE q.tenant = $1`, tenant)
}

func pushItems(queue string, n int) obj {
	items := make([]obj, n)
	for i := range items {
		items[i] = obj{"queue": queue, "payload": obj{"n": i}}
	}
	return obj{"items": items}
}

// The queue limit: N queues are allowed, by configure or by a push creating one; the N+1st is
// refused by both with 429, and neither its queue nor its message is written. Another tenant is
// not limited. Raised at run time, it holds for the next request.
func TestTenantLimitQueuesAtTheBoundary(t *testing.T) {
	srv, a, b := tenantClients(t)
	admin := limitsAdmin(t, srv)
	q := testQueueName(t)
	setLimits(t, admin, a.tenant, obj{"maxQueues": 3})

	if code, body := a.do("POST", "/api/v1/configure", obj{"queue": q + "-1"}); code != http.StatusOK {
		t.Fatalf("configure 1: %d %s", code, body)
	}
	if code, body := a.do("POST", "/api/v1/configure", obj{"queue": q + "-1"}); code != http.StatusOK {
		t.Fatalf("configure 1 again (no new queue): %d %s", code, body)
	}
	for _, name := range []string{q + "-2", q + "-3"} {
		if code, body := a.do("POST", "/api/v1/push", pushItems(name, 1)); code != http.StatusCreated {
			t.Fatalf("push creating %s: %d %s", name, code, body)
		}
	}
	resp, body := a.sendFull("POST", "/api/v1/push", pushItems(q+"-4", 2))
	wantLimit(t, "push creating a 4th queue", resp, body, "Tenant limit reached: queues (3)")
	resp, body = a.sendFull("POST", "/api/v1/configure", obj{"queue": q + "-4"})
	wantLimit(t, "configure of a 4th queue", resp, body, "Tenant limit reached: queues (3)")
	resp, body = a.sendFull("POST", "/api/v1/transaction", obj{"operations": []obj{{"type": "push", "queue": q + "-4", "payload": 1}}})
	wantLimit(t, "transaction creating a 4th queue", resp, body, "Tenant limit reached: queues (3)")
	if n := queuesOf(t, a.tenant); n != 3 {
		t.Fatalf("%d queues of A stored, want 3", n)
	}
	if n := messagesOf(t, a.tenant); n != 2 {
		t.Fatalf("%d messages of A stored, want 2", n)
	}
	// Pushing to the queues A has is not creating one.
	if code, body := a.do("POST", "/api/v1/push", pushItems(q+"-1", 1)); code != http.StatusCreated {
		t.Fatalf("push to an existing queue at the limit: %d %s", code, body)
	}
	// B has no limit.
	for i := range 4 {
		if code, body := b.do("POST", "/api/v1/push", pushItems(fmt.Sprint(q, "-", i), 1)); code != http.StatusCreated {
			t.Fatalf("B's push: %d %s", code, body)
		}
	}

	setLimits(t, admin, a.tenant, obj{"maxQueues": 4})
	if code, body := a.do("POST", "/api/v1/push", pushItems(q+"-4", 1)); code != http.StatusCreated {
		t.Fatalf("push after the limit was raised: %d %s", code, body)
	}
	if n := queuesOf(t, a.tenant); n != 4 {
		t.Fatalf("%d queues of A stored, want 4", n)
	}
	// The refusals are counted by tenant, which the limits name.
	_, metrics := doURL(t, "GET", srv.URL+"/metrics/prometheus", nil)
	want := fmt.Sprintf(`queen_tenant_limit_refusals_total{limit="queues",tenant=%q} 3`, a.tenant)
	if !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %s", want)
	}
}

// The stored-messages limit: a push batch that would pass it is refused whole (nothing of it
// stored), pushes up to exactly the limit pass, consuming makes room, a transaction's push
// counts too, and a limit raised at run time holds for the next push.
func TestTenantLimitMessagesAtTheBoundary(t *testing.T) {
	srv, a, b := tenantClients(t)
	admin := limitsAdmin(t, srv)
	q := testQueueName(t)
	setLimits(t, admin, a.tenant, obj{"maxMessages": 5})

	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 3)); code != http.StatusCreated {
		t.Fatalf("push of 3: %d %s", code, body)
	}
	resp, body := a.sendFull("POST", "/api/v1/push", pushItems(q, 3))
	wantLimit(t, "push of 3 more", resp, body, "Tenant limit reached: messages (5)")
	if n := messagesOf(t, a.tenant); n != 3 {
		t.Fatalf("%d messages stored after the refused batch, want 3", n)
	}
	if code, body := a.do("POST", "/api/v1/push", pushItems(q+"-other", 2)); code != http.StatusCreated {
		t.Fatalf("push of 2 to another queue (5 in all): %d %s", code, body)
	}
	resp, body = a.sendFull("POST", "/api/v1/push", pushItems(q, 1))
	wantLimit(t, "push of the 6th", resp, body, "Tenant limit reached: messages (5)")
	resp, body = a.sendFull("POST", "/api/v1/transaction", obj{"operations": []obj{{"type": "push", "queue": q, "payload": 1}}})
	wantLimit(t, "transaction pushing the 6th", resp, body, "Tenant limit reached: messages (5)")
	if n := messagesOf(t, a.tenant); n != 5 {
		t.Fatalf("%d messages stored, want 5", n)
	}
	// B is not limited by A's limit.
	if code, body := b.do("POST", "/api/v1/push", pushItems(q, 10)); code != http.StatusCreated {
		t.Fatalf("B's push: %d %s", code, body)
	}

	// Consuming one makes room for one.
	if code, body := a.do("GET", "/api/v1/pop/queue/"+q+"?autoAck=true&wait=false", nil); code != http.StatusOK {
		t.Fatalf("pop: %d %s", code, body)
	}
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 1)); code != http.StatusCreated {
		t.Fatalf("push after consuming one: %d %s", code, body)
	}
	resp, body = a.sendFull("POST", "/api/v1/push", pushItems(q, 1))
	wantLimit(t, "push past the limit again", resp, body, "Tenant limit reached: messages (5)")

	setLimits(t, admin, a.tenant, obj{"maxMessages": 8})
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 3)); code != http.StatusCreated {
		t.Fatalf("push after the limit was raised: %d %s", code, body)
	}
	// Removing every limit removes the row.
	setLimits(t, admin, a.tenant, obj{})
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 20)); code != http.StatusCreated {
		t.Fatalf("push without limits: %d %s", code, body)
	}
	if n := tenantCount(t, `SELECT count(*) FROM tenant_limits WHERE tenant = $1`, a.tenant); n != 0 {
		t.Fatalf("the limits row of A is still there after every limit was removed")
	}
}

// The push rate, on the broker's clock: one second's allowance passes, the next message is
// refused with the time until it refills; a push larger than the allowance passes on a full
// bucket and leaves a debt. A transaction's pushes count too.
func TestTenantLimitPushRateAtTheBoundary(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testDSN, testserver.Options{JWTSecret: authSecret, FakeClock: true})
	n := queueSeq.Add(1)
	a := tenantClient{t, srv.URL, "Bearer " + tenantToken(t, fmt.Sprint("rate-a-", n), "read-write"), fmt.Sprint("rate-a-", n)}
	b := tenantClient{t, srv.URL, "Bearer " + tenantToken(t, fmt.Sprint("rate-b-", n), "read-write"), fmt.Sprint("rate-b-", n)}
	admin := limitsAdmin(t, srv)
	q := testQueueName(t)
	setLimits(t, admin, a.tenant, obj{"pushRate": 3})

	for i := range 3 {
		if code, body := a.do("POST", "/api/v1/push", pushItems(q, 1)); code != http.StatusCreated {
			t.Fatalf("push %d within the rate: %d %s", i, code, body)
		}
	}
	resp, body := a.sendFull("POST", "/api/v1/push", pushItems(q, 1))
	wantLimit(t, "the 4th push in the second", resp, body, "Tenant limit reached: push rate (3/s)")
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Fatalf("Retry-After %q, want 1", ra)
	}
	resp, body = a.sendFull("POST", "/api/v1/transaction", obj{"operations": []obj{{"type": "push", "queue": q, "payload": 1}}})
	wantLimit(t, "a transaction's push in the same second", resp, body, "Tenant limit reached: push rate (3/s)")
	if code, body := b.do("POST", "/api/v1/push", pushItems(q, 5)); code != http.StatusCreated {
		t.Fatalf("B is not limited: %d %s", code, body)
	}
	if n := messagesOf(t, a.tenant); n != 3 {
		t.Fatalf("%d messages of A stored, want 3", n)
	}

	srv.Clock.Advance(time.Second)
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 10)); code != http.StatusCreated {
		t.Fatalf("a push of 10 on a full bucket: %d %s", code, body)
	}
	srv.Clock.Advance(2 * time.Second) // 7 messages of debt, 6 paid back
	resp, body = a.sendFull("POST", "/api/v1/push", pushItems(q, 1))
	wantLimit(t, "a push while the debt is not paid back", resp, body, "Tenant limit reached: push rate (3/s)")
	srv.Clock.Advance(time.Second)
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 1)); code != http.StatusCreated {
		t.Fatalf("a push once the debt is paid back: %d %s", code, body)
	}

	// Raised at run time: the next push has the new allowance.
	setLimits(t, admin, a.tenant, obj{"pushRate": 100})
	if code, body := a.do("POST", "/api/v1/push", pushItems(q, 100)); code != http.StatusCreated {
		t.Fatalf("push after the rate was raised: %d %s", code, body)
	}
}

// Many goroutines race for the last places: exactly the limit is stored, never more, and every
// other request is refused with 429 (the limits are checked under the tenant's row lock, in
// the writing transaction).
func TestTenantLimitsHoldUnderRacingWriters(t *testing.T) {
	srv, a, _ := tenantClients(t)
	admin := limitsAdmin(t, srv)
	q := testQueueName(t)
	const maxMessages, maxQueues, writers, each = 17, 4, 8, 5
	setLimits(t, admin, a.tenant, obj{"maxMessages": maxMessages, "maxQueues": maxQueues})

	var queued, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Each writer pushes to queues of its own and to shared ones: some requests race
				// for the queue places, all for the message places.
				queue := fmt.Sprint(q, "-", (w+i)%6)
				code, body, err := a.send("POST", "/api/v1/push", pushItems(queue, 1+i%2))
				switch {
				case err != nil:
					errs <- err
				case code == http.StatusCreated:
					queued.Add(int64(1 + i%2))
				case code == http.StatusTooManyRequests:
					refused.Add(1)
				default:
					errs <- fmt.Errorf("push: %d %s", code, body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	stored := messagesOf(t, a.tenant)
	if stored > maxMessages || int64(stored) != queued.Load() {
		t.Fatalf("%d messages stored, %d answered queued, limit %d", stored, queued.Load(), maxMessages)
	}
	if n := queuesOf(t, a.tenant); n > maxQueues {
		t.Fatalf("%d queues stored, limit %d", n, maxQueues)
	}
	if refused.Load() == 0 {
		t.Fatalf("no request was refused: the race never reached the limits")
	}
}

// Who may read and set the limits: the broker's administrators (default tenant) set and read
// every tenant's; a tenant's admin reads its own only and sets none; the operator reads.
func TestTenantLimitsRouteAccess(t *testing.T) {
	srv, a, b := tenantClients(t)
	admin := limitsAdmin(t, srv)
	path := "/api/v1/system/tenants/" + a.tenant + "/limits"
	setLimits(t, admin, a.tenant, obj{"maxQueues": 2, "pushRate": nil})
	want := fmt.Sprintf(`{"tenant":%q,"maxQueues":2,"maxMessages":null,"pushRate":null}`, a.tenant)
	for _, c := range []tenantClient{admin, a, {t, srv.URL, "Bearer " + authToken(t, jwt.MapClaims{"sub": "ops", "roles": []string{"operator", "admin"},
		"exp": time.Now().Add(time.Hour).Unix()}), "operator"}} {
		if code, body := c.do("GET", path, nil); code != http.StatusOK || string(body) != want {
			t.Fatalf("GET by %q: %d %s, want %s", c.tenant, code, body, want)
		}
	}
	for _, c := range []struct {
		cl     tenantClient
		method string
		body   any
	}{{b, "GET", nil}, {a, "PUT", obj{"maxQueues": 100}}, {b, "PUT", obj{"maxQueues": 100}}} {
		code, body := c.cl.do(c.method, path, c.body)
		if code != http.StatusForbidden || !strings.Contains(string(body), "Tenant limits are set by the broker's administrators") {
			t.Fatalf("%s by %s: %d %s, want 403", c.method, c.cl.tenant, code, body)
		}
	}
	for body, msg := range map[string]string{
		`{"maxQueues":-1}`:         "maxQueues must be null or an integer from 0 to 2147483647",
		`{"maxMessages":"10"}`:     "maxMessages must be null or an integer from 0 to 9223372036854775807",
		`{"pushRate":1.5}`:         "pushRate must be null or an integer from 0 to 2147483647",
		`{"maxQueues":3000000000}`: "maxQueues must be null or an integer from 0 to 2147483647",
	} {
		code, out := admin.do("PUT", path, body)
		if code != http.StatusBadRequest || !strings.Contains(string(out), msg) {
			t.Fatalf("PUT %s: %d %s, want 400 %q", body, code, out, msg)
		}
	}
	if code, body := admin.do("GET", "/api/v1/system/tenants/bad%20name/limits", nil); code != http.StatusBadRequest {
		t.Fatalf("GET of an invalid tenant name: %d %s", code, body)
	}
	if code, body := admin.do("GET", path, nil); code != http.StatusOK || string(body) != want {
		t.Fatalf("the refused PUTs changed the limits: %s", body)
	}
}
