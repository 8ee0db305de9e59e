package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testserver"
)

// The wire layer's refusals need no database: a request the wire layer answers 400 (or 413)
// must never reach the data path nor the read side. fakeSetup serves httpapi.New over fakes
// that fail the test on any call, so each refusal test also proves "a 400 never reaches the
// data path", which is stronger than checking afterwards that the database holds nothing.

// refusingData is a data path every call of which fails the test: the requests sent to a
// fakeSetup bundle are all ones the wire layer must refuse on its own.
type refusingData struct {
	fail  func(format string, args ...any) // t.Errorf
	mu    sync.Mutex
	calls []string
}

// reached records that method was called and fails the test.
func (f *refusingData) reached(method string) {
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.mu.Unlock()
	f.fail("a request the wire layer must refuse reached the data path: %s", method)
}

func (f *refusingData) Push(context.Context, []mq.PushItem, *string) ([]mq.PushResult, error) {
	f.reached("Push")
	return nil, nil
}
func (f *refusingData) Pop(context.Context, mq.PopRequest) (mq.PopResult, error) {
	f.reached("Pop")
	return mq.PopResult{}, nil
}
func (f *refusingData) Ack(context.Context, []mq.AckItem) ([]mq.AckResult, error) {
	f.reached("Ack")
	return nil, nil
}
func (f *refusingData) ExtendLease(context.Context, string, int) (time.Time, string, error) {
	f.reached("ExtendLease")
	return time.Time{}, "", nil
}
func (f *refusingData) Transaction(context.Context, []mq.TxnEntry, []string, *string) (mq.TxnOutcome, error) {
	f.reached("Transaction")
	return mq.TxnOutcome{}, nil
}
func (f *refusingData) Configure(context.Context, string, *string, *string, mq.QueueOptions) (string, string, string, string, error) {
	f.reached("Configure")
	return "", "", "", "", nil
}
func (f *refusingData) Ping(context.Context) error {
	f.reached("Ping")
	return nil
}
func (f *refusingData) StreamRegister(context.Context, mq.StreamRegistration) (mq.StreamRegistered, error) {
	f.reached("StreamRegister")
	return mq.StreamRegistered{}, nil
}
func (f *refusingData) StreamCycle(context.Context, mq.StreamCycle, *string) (mq.StreamCycleOutcome, error) {
	f.reached("StreamCycle")
	return mq.StreamCycleOutcome{}, nil
}
func (f *refusingData) StreamState(context.Context, mq.StreamStateQuery) ([]mq.StreamStateRow, error) {
	f.reached("StreamState")
	return nil, nil
}
func (f *refusingData) StreamQueries(context.Context) ([]mq.StreamQuery, error) {
	f.reached("StreamQueries")
	return nil, nil
}
func (f *refusingData) StreamDelete(context.Context, string) (bool, int64, error) {
	f.reached("StreamDelete")
	return false, 0, nil
}

// refusingRead is a read side that must never be called: the embedded interface is nil, so
// a call panics and the request fails (no answer, or a 500), which fails the test asserting
// the refusal.
type refusingRead struct{ httpapi.ReadSide }

// Now answers the wall clock; middlewares may read it on any request.
func (refusingRead) Now() time.Time { return time.Now() }

// fakeSetup is setup for the wire layer's refusal tests: the same bundle (b.do, b.valDo,
// b.srv.URL and a queue name of its own) on httpapi.New over refusingData and refusingRead,
// with no database. b.srv carries only URL; b.push, b.pop and b.ack cannot succeed on it.
func fakeSetup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	data := &refusingData{fail: t.Errorf}
	cfg := httpapi.Config{Metrics: metrics.New(metrics.Options{Log: slog.New(slog.DiscardHandler)})}
	ts := httptest.NewServer(httpapi.New(data, refusingRead{}, cfg, slog.New(slog.DiscardHandler)))
	t.Cleanup(ts.Close)
	return &bundle{t: t, srv: &testserver.Server{URL: ts.URL}, queue: testQueueName(t)}
}

// A request the wire layer accepts reaches the data path and so fails a fakeSetup test: the
// harness cannot pass a refusal test whose request was in fact served.
func TestFakeSetupFailsWhenARequestIsServed(t *testing.T) {
	t.Parallel()
	data := &refusingData{fail: func(string, ...any) {}}
	cfg := httpapi.Config{Metrics: metrics.New(metrics.Options{Log: slog.New(slog.DiscardHandler)})}
	ts := httptest.NewServer(httpapi.New(data, refusingRead{}, cfg, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	valSend(t, "POST", ts.URL+"/api/v1/push", obj{"items": []obj{{"queue": "q", "payload": 1}}})
	data.mu.Lock()
	defer data.mu.Unlock()
	if len(data.calls) != 1 || data.calls[0] != "Push" {
		t.Fatalf("a valid push reached the fake data path as %v, want [Push]", data.calls)
	}
}
