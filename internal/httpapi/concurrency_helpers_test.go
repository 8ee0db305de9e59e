package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// HTTP clients for tests that run requests concurrently (long polls, late acks). The
// exactly-once and ordering invariants under many concurrent producers and consumers are
// tested in internal/broker (concurrency_test.go there).

// ccSetup is setup with a queue name unique to this run, so the tests also hold with -count=N
// (the database lives as long as the test process).
func ccSetup(t *testing.T, o testserver.Options) *bundle {
	b := setup(t, o)
	b.queue = fmt.Sprintf("%s-%d", b.queue, time.Now().UnixNano())
	return b
}

// ccShort cuts a response body for an error message.
func ccShort(body []byte) string {
	if len(body) > 300 {
		return string(body[:300]) + "..."
	}
	return string(body)
}

// ccAPI is an HTTP client for tests that work from many goroutines: its methods return errors
// instead of failing the test (t.Fatal must only be called from the test's own goroutine),
// and its transport keeps enough idle connections for the concurrency in use.
type ccAPI struct {
	base string
	c    *http.Client
}

func newCCAPI(t testing.TB, base string) *ccAPI {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &ccAPI{base: base, c: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

func (a *ccAPI) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	resp, out, err := roundTrip(ctx, a.c, method, a.base+path, body, nil)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// push writes items and requires 201 with every item queued.
func (a *ccAPI) push(ctx context.Context, items ...obj) ([]pushed, error) {
	code, body, err := a.call(ctx, "POST", "/api/v1/push", obj{"items": items})
	if err != nil {
		return nil, err
	}
	if code != http.StatusCreated {
		return nil, fmt.Errorf("push: %d %s", code, ccShort(body))
	}
	var res []pushed
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("push answer %s: %v", body, err)
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("push: %d results for %d items: %s", len(res), len(items), body)
	}
	for _, r := range res {
		if r.Status != "queued" {
			return nil, fmt.Errorf("push: item not queued: %s", ccShort(body))
		}
	}
	return res, nil
}

// pop pops; ok is false on 204. Any other status is an error.
func (a *ccAPI) pop(ctx context.Context, path string) (p popped, ok bool, err error) {
	code, body, err := a.call(ctx, "GET", path, nil)
	if err != nil {
		return p, false, err
	}
	switch code {
	case http.StatusNoContent:
		if len(body) != 0 {
			return p, false, fmt.Errorf("pop %s: 204 with body %q", path, body)
		}
		return p, false, nil
	case http.StatusOK:
		if err := json.Unmarshal(body, &p); err != nil {
			return p, false, fmt.Errorf("pop answer %s: %v", body, err)
		}
		if !p.Success || len(p.Messages) == 0 {
			return p, false, fmt.Errorf("pop %s: 200 without messages: %s", path, body)
		}
		return p, true, nil
	}
	return p, false, fmt.Errorf("pop %s: %d %s", path, code, body)
}

// acks posts to /api/v1/ack (one item) or /api/v1/ack/batch and requires 200 with one
// result per item.
func (a *ccAPI) acks(ctx context.Context, group string, items ...obj) ([]acked, error) {
	path, body := "/api/v1/ack/batch", any(obj{"consumerGroup": group, "acknowledgments": items})
	if len(items) == 1 && group == "" {
		path, body = "/api/v1/ack", items[0]
	}
	code, out, err := a.call(ctx, "POST", path, body)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", path, code, out)
	}
	var res []acked
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(items) {
		return nil, fmt.Errorf("%s answer %s for %d items (%v)", path, out, len(items), err)
	}
	return res, nil
}

// ccDelivery is one message as a consumer received it.
type ccDelivery struct {
	key       string
	partition string
}

// ccAcks builds the acks of deliveries.
func ccAcks(ds []ccDelivery, lease string) []obj {
	out := make([]obj, len(ds))
	for i, d := range ds {
		out[i] = obj{"transactionId": d.key, "partitionId": d.partition}
		if lease != "" {
			out[i]["leaseId"] = lease
		}
	}
	return out
}

// ccKeys lists the transaction ids of a pop answer.
func ccKeys(p popped) []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}
