package httpapi_test

// Tenants over real HTTP (docs/api/concepts.md §14): two tenants with the same queue name,
// the seed page's foreign-partition rollback, the tenant claim's checks and the operator role.
// Helpers here are prefixed tenant.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/testserver"
)

// tenantClient sends requests with one token.
type tenantClient struct {
	t      testing.TB
	url    string
	authz  string
	tenant string
}

// tenantToken is a token of tenant (no tenant claim when tenant is nil) with role.
func tenantToken(t testing.TB, tenant any, role string) string {
	c := jwt.MapClaims{"sub": fmt.Sprint("user-", tenant), "role": role, "exp": time.Now().Add(time.Hour).Unix()}
	if tenant != nil {
		c["tenant"] = tenant
	}
	return authToken(t, c)
}

func tenantClients(t *testing.T) (srv *testserver.Server, a, b tenantClient) {
	t.Parallel()
	srv = testserver.Start(t, testDSN, testserver.Options{JWTSecret: authSecret})
	// Tenants of this test alone (the tests share a database), named like its queues.
	n := queueSeq.Add(1)
	ta, tb := fmt.Sprint("team-a-", n), fmt.Sprint("team-b-", n)
	a = tenantClient{t, srv.URL, "Bearer " + tenantToken(t, ta, "admin"), ta}
	b = tenantClient{t, srv.URL, "Bearer " + tenantToken(t, tb, "admin"), tb}
	return srv, a, b
}

// send never calls t.Fatal, so any goroutine may use it.
func (c tenantClient) send(method, path string, body any) (int, []byte, error) {
	resp, out, err := roundTrip(context.Background(), http.DefaultClient, method, c.url+path, body,
		http.Header{"Authorization": {c.authz}})
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

func (c tenantClient) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	code, out, err := c.send(method, path, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, out
}

// Two tenants push to and pop from a queue of the same name at once, from many goroutines:
// each gets exactly its own messages, each once.
func TestTenantsWithTheSameQueueNameSeeOnlyTheirOwnMessages(t *testing.T) {
	_, a, b := tenantClients(t)
	queue := testQueueName(t)
	const producers, perProducer, consumers = 4, 25, 4
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, c := range []struct {
		name string
		cl   tenantClient
	}{{a.tenant, a}, {b.tenant, b}} {
		for p := range producers {
			wg.Go(func() {
				for i := range perProducer {
					code, body, err := c.cl.send("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue,
						"partition": fmt.Sprint("p", i%3), "payload": obj{"tenant": c.name, "n": p*perProducer + i}}}})
					if err != nil || code != http.StatusCreated {
						errs <- fmt.Errorf("%s push: %d %s %v", c.name, code, body, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	got := map[string]map[float64]int{a.tenant: {}, b.tenant: {}}
	var mu sync.Mutex
	for _, c := range []struct {
		name string
		cl   tenantClient
	}{{a.tenant, a}, {b.tenant, b}} {
		for range consumers {
			wg.Go(func() {
				for {
					code, body, err := c.cl.send("GET", "/api/v1/pop/queue/"+queue+"?batch=7&autoAck=true", nil)
					if err != nil || (code != http.StatusOK && code != http.StatusNoContent) {
						errs <- fmt.Errorf("%s pop: %d %s %v", c.name, code, body, err)
						return
					}
					if code == http.StatusNoContent {
						return
					}
					var p popped
					if err := json.Unmarshal(body, &p); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, m := range p.Messages {
						var d struct {
							Tenant string  `json:"tenant"`
							N      float64 `json:"n"`
						}
						_ = json.Unmarshal(m.Data, &d)
						if d.Tenant != c.name {
							errs <- fmt.Errorf("%s popped a message of %q", c.name, d.Tenant)
						}
						got[c.name][d.N]++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for name, seen := range got {
		if len(seen) != producers*perProducer {
			t.Errorf("%s received %d distinct messages, want %d", name, len(seen), producers*perProducer)
		}
		for n, k := range seen {
			if k != 1 {
				t.Errorf("%s received message %v %d times", name, n, k)
			}
		}
	}
}

// The seed page's fourth rollback cause (docs/api/transaction.md §5): a transaction of tenant B
// that acks tenant A's message by A's partitionId and pushes to B's queue rolls back as QTXN;
// A's message stays unacked under A's lease, and B's push is not stored.
func TestTenantTransactionAckingAnotherTenantsPartitionRollsBackAsQTXN(t *testing.T) {
	_, a, b := tenantClients(t)
	queue := testQueueName(t)
	if code, body := a.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "transactionId": "a-1", "payload": 1}}}); code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, body)
	}
	code, body := a.do("GET", "/api/v1/pop/queue/"+queue, nil)
	if code != http.StatusOK {
		t.Fatalf("pop: %d %s", code, body)
	}
	p := decode[popped](t, body)
	code, body = b.do("POST", "/api/v1/transaction", obj{"operations": []obj{
		{"type": "ack", "transactionId": "a-1", "partitionId": p.PartitionID},
		{"type": "push", "queue": queue + "-out", "payload": 2},
	}})
	want := `"error":"QTXN ack references unknown transactionId; transaction rolled back"`
	if code != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("B's transaction: %d %s, want the QTXN rollback", code, body)
	}
	// B's push was not stored: B's queue does not exist.
	if code, body := b.do("GET", "/api/v1/resources/queues/"+queue+"-out", nil); code != http.StatusNotFound {
		t.Fatalf("B's rolled-back push left its queue: %d %s", code, body)
	}
	// A's message is still A's, unacked under A's lease: A's ack settles it now.
	code, body = a.do("POST", "/api/v1/ack", obj{"transactionId": "a-1", "partitionId": p.PartitionID,
		"leaseId": p.LeaseID, "status": "completed"})
	if code != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("A's ack after B's rollback: %d %s", code, body)
	}
}

// B acking A's message by its partitionId and lease, or extending A's lease, is answered as an
// unknown message and an unknown lease, and A's lease is untouched.
func TestTenantAckAndLeaseOfAnotherTenantAreUnknown(t *testing.T) {
	_, a, b := tenantClients(t)
	queue := testQueueName(t)
	a.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "transactionId": "a-1", "payload": 1}}})
	code, body := a.do("GET", "/api/v1/pop/queue/"+queue, nil)
	if code != http.StatusOK {
		t.Fatalf("pop: %d %s", code, body)
	}
	p := decode[popped](t, body)
	ack := obj{"transactionId": "a-1", "partitionId": p.PartitionID, "leaseId": p.LeaseID, "status": "completed"}
	missing := obj{"transactionId": "a-1", "partitionId": "00000000-0000-7000-8000-000000000001", "leaseId": p.LeaseID, "status": "completed"}
	_, foreign := b.do("POST", "/api/v1/ack", ack)
	_, unknown := b.do("POST", "/api/v1/ack", missing)
	if string(foreign) != strings.ReplaceAll(string(unknown), "00000000-0000-7000-8000-000000000001", p.PartitionID) {
		t.Fatalf("B's ack of A's message: %s; of an unknown partition: %s", foreign, unknown)
	}
	_, foreign = b.do("POST", "/api/v1/lease/"+p.LeaseID+"/extend", obj{"seconds": 60})
	_, unknown = b.do("POST", "/api/v1/lease/00000000-0000-7000-8000-000000000002/extend", obj{"seconds": 60})
	if string(foreign) != strings.ReplaceAll(string(unknown), "00000000-0000-7000-8000-000000000002", p.LeaseID) {
		t.Fatalf("B's extend of A's lease: %s; of an unknown lease: %s", foreign, unknown)
	}
	if code, body := a.do("POST", "/api/v1/ack", ack); code != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("A's ack: %d %s", code, body)
	}
}

// A tenant claim that is present but no tenant name is refused with 403 and a clear message,
// never taken as the default tenant; a token without the claim is the default tenant, which
// authentication off also is.
func TestTenantClaimMustBeATenantName(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{JWTSecret: authSecret})
	t.Parallel()
	msg := "Invalid tenant claim: expected 1 to 64 letters, digits, '.', '_' or '-'"
	for _, bad := range []any{"", 42, []any{"a"}, "a b", "a/b", strings.Repeat("x", 65), "ü"} {
		resp, body := authSend(t, "GET", srv.URL+"/api/v1/resources/queues", bearer(tenantToken(t, bad, "admin")), nil)
		authWant(t, resp, body, http.StatusForbidden, msg)
	}
	queue := testQueueName(t)
	none := tenantClient{t, srv.URL, "Bearer " + tenantToken(t, nil, "admin"), ""}
	other := tenantClient{t, srv.URL, "Bearer " + tenantToken(t, "x", "admin"), "x"}
	none.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "payload": 1}}})
	if code, body := other.do("GET", "/api/v1/resources/queues/"+queue, nil); code != http.StatusNotFound {
		t.Fatalf("tenant x sees the default tenant's queue: %d %s", code, body)
	}
	if code, body := none.do("GET", "/api/v1/resources/queues/"+queue, nil); code != http.StatusOK {
		t.Fatalf("the default tenant's own queue: %d %s", code, body)
	}
}

// The operator role reads every tenant, shows the tenant of each listed queue, and writes nothing.
func TestTenantOperatorReadsEveryTenantAndWritesNothing(t *testing.T) {
	srv, a, b := tenantClients(t)
	queue := testQueueName(t)
	a.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "payload": 1}}})
	b.do("POST", "/api/v1/push", obj{"items": []obj{{"queue": queue, "payload": 2}}})
	// An operator that also holds the admin role still writes nothing.
	op := tenantClient{t, srv.URL, "Bearer " + authToken(t, jwt.MapClaims{"sub": "ops", "roles": []string{"operator", "admin"},
		"exp": time.Now().Add(time.Hour).Unix()}), ""}
	code, body := op.do("GET", "/api/v1/resources/queues?search="+queue, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"tenant":"`+a.tenant+`"`) || !strings.Contains(string(body), `"tenant":"`+b.tenant+`"`) {
		t.Fatalf("operator's listing: %d %s", code, body)
	}
	for _, w := range []struct{ method, path string }{{"POST", "/api/v1/push"}, {"GET", "/api/v1/pop/queue/" + queue}} {
		if code, body := op.do(w.method, w.path, obj{"items": []obj{{"queue": queue, "payload": 3}}}); code != http.StatusForbidden ||
			!strings.Contains(string(body), "The operator role is read-only") {
			t.Fatalf("operator %s %s: %d %s", w.method, w.path, code, body)
		}
	}
	// A tenant's listing shows its own queue only.
	code, body = a.do("GET", "/api/v1/resources/queues?search="+queue, nil)
	if code != http.StatusOK || strings.Contains(string(body), b.tenant) || strings.Contains(string(body), `"tenant"`) {
		t.Fatalf("team-a's listing: %d %s", code, body)
	}
}
