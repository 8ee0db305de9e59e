package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// bundle is what most tests need: a broker and a queue name no other test uses.
type bundle struct {
	t     *testing.T
	srv   *testserver.Server
	queue string
}

func setup(t *testing.T, o testserver.Options) *bundle {
	t.Helper()
	t.Parallel()
	return &bundle{t: t, srv: testserver.Start(t, testDSN, o), queue: testQueueName(t)}
}

// queueSeq numbers the bundles of this process, so that a test run again (go test -count=N)
// gets queues of its own.
var queueSeq atomic.Int64

// testQueueName is a queue name no other test (or earlier run) uses.
func testQueueName(t *testing.T) string {
	return "q-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + strconv.FormatInt(queueSeq.Add(1), 36)
}

// do sends a request and returns the status and the body.
func (b *bundle) do(method, path string, body any) (int, []byte) {
	b.t.Helper()
	return doURL(b.t, method, b.srv.URL+path, body)
}

func doURL(t testing.TB, method, url string, body any) (int, []byte) {
	t.Helper()
	resp, out, err := roundTrip(context.Background(), http.DefaultClient, method, url, body, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, out
}

// roundTrip sends one request and reads the whole answer; it never calls t.Fatal, so any
// goroutine may use it. body is nil (none), a string or []byte (sent verbatim), an io.Reader
// (streamed without a declared length) or anything else (sent as JSON).
func roundTrip(ctx context.Context, c *http.Client, method, url string, body any, header http.Header) (*http.Response, []byte, error) {
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case []byte:
		r = bytes.NewReader(v)
	case io.Reader:
		r = io.NopCloser(v) // hides the concrete type: no Content-Length, chunked
	default:
		buf, err := json.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp, out, nil
}

// decode unmarshals a JSON body into v, failing the test on error.
func decode[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

type obj = map[string]any

// pushed is one element of a push answer.
type pushed struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transaction_id"`
	Status        string  `json:"status"`
	MessageID     string  `json:"message_id"`
	PartitionID   string  `json:"partition_id"`
	Error         string  `json:"error"`
	QueueName     string  `json:"queueName"`
	TraceID       *string `json:"trace_id"`
}

// popped is a pop answer.
type popped struct {
	Success           bool   `json:"success"`
	Queue             string `json:"queue"`
	Partition         string `json:"partition"`
	PartitionID       string `json:"partitionId"`
	LeaseID           string `json:"leaseId"`
	ConsumerGroup     string `json:"consumerGroup"`
	PartitionsClaimed int    `json:"partitionsClaimed"`
	Messages          []struct {
		ID            string          `json:"id"`
		TransactionID string          `json:"transactionId"`
		TraceID       *string         `json:"traceId"`
		Data          json.RawMessage `json:"data"`
		CreatedAt     string          `json:"createdAt"`
		PartitionID   string          `json:"partitionId"`
		Partition     string          `json:"partition"`
		Queue         string          `json:"queue"`
		LeaseID       string          `json:"leaseId"`
		ConsumerGroup string          `json:"consumerGroup"`
		RetryCount    int             `json:"retryCount"`
	} `json:"messages"`
}

// acked is one element of an ack answer.
type acked struct {
	Index            int     `json:"index"`
	TransactionID    string  `json:"transactionId"`
	Success          bool    `json:"success"`
	Error            *string `json:"error"`
	QueueName        *string `json:"queueName"`
	PartitionName    *string `json:"partitionName"`
	LeaseReleased    bool    `json:"leaseReleased"`
	DLQ              bool    `json:"dlq"`
	AlreadyCommitted bool    `json:"alreadyCommitted"`
}

// push pushes payloads into one partition and returns the results, requiring 201.
func (b *bundle) push(partition string, items ...obj) []pushed {
	b.t.Helper()
	for _, it := range items {
		if _, ok := it["queue"]; !ok {
			it["queue"] = b.queue
		}
		if partition != "" {
			it["partition"] = partition
		}
	}
	code, body := b.do("POST", "/api/v1/push", obj{"items": items})
	if code != http.StatusCreated {
		b.t.Fatalf("push: %d %s", code, body)
	}
	return decode[[]pushed](b.t, body)
}

// pop pops with a query string; ok is false on 204.
func (b *bundle) pop(path string) (popped, bool) {
	b.t.Helper()
	code, body := b.do("GET", path, nil)
	switch code {
	case http.StatusNoContent:
		return popped{}, false
	case http.StatusOK:
		return decode[popped](b.t, body), true
	}
	b.t.Fatalf("pop %s: %d %s", path, code, body)
	return popped{}, false
}

// ack sends one ack and returns its result.
func (b *bundle) ack(a obj) acked {
	b.t.Helper()
	code, body := b.do("POST", "/api/v1/ack", a)
	if code != http.StatusOK {
		b.t.Fatalf("ack: %d %s", code, body)
	}
	res := decode[[]acked](b.t, body)
	if len(res) != 1 {
		b.t.Fatalf("ack answer %s", body)
	}
	return res[0]
}
