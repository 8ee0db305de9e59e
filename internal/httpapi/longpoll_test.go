package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
	"github.com/queen-go/queen/internal/waiter"
)

// Long-poll tests (operations.md §3). Servers that must prove a wake-up came from a signal run
// with a 5 s fallback poll (lpSlowPoll): a parked pop that answers well within a second of the
// write cannot have been answered by polling.

var lpSlowPoll = testserver.Options{PollInitial: 5 * time.Second, PollMax: 5 * time.Second}

// lpResult is the outcome of a pop run in the background.
type lpResult struct {
	p    popped
	ok   bool
	err  error
	done time.Time
}

// lpPop runs a pop in the background.
func lpPop(ctx context.Context, api *ccAPI, path string) <-chan lpResult {
	ch := make(chan lpResult, 1)
	go func() {
		p, ok, err := api.pop(ctx, path)
		ch <- lpResult{p: p, ok: ok, err: err, done: time.Now()}
	}()
	return ch
}

// lpWaitParked waits until srv has exactly n parked pops.
func lpWaitParked(t *testing.T, srv *testserver.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if srv.Broker.Hub().Parked() == n {
			return
		}
	}
	t.Fatalf("parked pops: %d, want %d", srv.Broker.Hub().Parked(), n)
}

// lpParkedPop starts a long poll on srv and returns once it is parked and has had time for its
// first (empty) attempt, so that a write made afterwards can only reach it as a wake-up.
func lpParkedPop(t *testing.T, srv *testserver.Server, api *ccAPI, path string) <-chan lpResult {
	t.Helper()
	before := srv.Broker.Hub().Parked()
	ch := lpPop(context.Background(), api, path)
	lpWaitParked(t, srv, before+1)
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-ch:
		t.Fatalf("pop answered before any write: %+v", r)
	default:
	}
	return ch
}

// lpWaitListening waits until listener's notification listener receives the NOTIFY of pushes
// made through pusher (each instance LISTENs in the background from its start). It parks a
// label filter directly in the hub: only a NOTIFY carries labels, so a local wake-up cannot
// satisfy it.
func lpWaitListening(t *testing.T, listener *testserver.Server, pusher *ccAPI) {
	t.Helper()
	ns := fmt.Sprintf("lpwarm%d", time.Now().UnixNano())
	w := listener.Broker.Hub().Park(waiter.Filter{Namespace: ns, ByLabels: true})
	defer w.Leave()
	for range 50 {
		if _, err := pusher.push(context.Background(), obj{"queue": ns + ".warm", "payload": nil}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.C:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the notification listener never received a wake-up")
}

// lpRequireWoken requires the background pop to answer 200 with the one message key within 1 s
// of the write (push or ack) that returned at wrote.
func lpRequireWoken(t *testing.T, ch <-chan lpResult, wrote time.Time, key string) popped {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || !r.ok {
			t.Fatalf("woken pop: ok=%v err=%v", r.ok, r.err)
		}
		if len(r.p.Messages) != 1 || r.p.Messages[0].TransactionID != key {
			t.Fatalf("woken pop delivered %+v, want %s", r.p.Messages, key)
		}
		latency := r.done.Sub(wrote)
		t.Logf("answered %v after the write returned", latency.Round(time.Microsecond))
		if latency >= time.Second {
			t.Fatalf("woken %v after the write, want < 1s", latency)
		}
		return r.p
	case <-time.After(3 * time.Second):
		t.Fatal("parked pop not woken by the write within 3s (fallback poll is 5s)")
	}
	return popped{}
}

// A pop parked on instance A is woken by a push served by instance B over the same database.
func TestLongPollWokenByOtherInstance(t *testing.T) {
	a := ccSetup(t, lpSlowPoll)
	bsrv := testserver.Start(t, testDSN, lpSlowPoll)
	apiA, apiB := newCCAPI(t, a.srv.URL), newCCAPI(t, bsrv.URL)
	code, body := doURL(t, "POST", bsrv.URL+"/api/v1/configure", obj{"queue": a.queue})
	if code != http.StatusOK {
		t.Fatalf("configure: %d %s", code, body)
	}
	lpWaitListening(t, a.srv, apiB)

	ch := lpParkedPop(t, a.srv, apiA, "/api/v1/pop/queue/"+a.queue+"?wait=true&timeout=10000&consumerGroup=g")
	if _, err := apiB.push(context.Background(), obj{"queue": a.queue, "payload": "x", "transactionId": "cross"}); err != nil {
		t.Fatal(err)
	}
	p := lpRequireWoken(t, ch, time.Now(), "cross")
	if p.ConsumerGroup != "g" || p.LeaseID == "" {
		t.Fatalf("woken pop %+v", p)
	}
	lpWaitParked(t, a.srv, 0)
}

// An ack that releases a lease wakes the group's parked pops, on the same instance and on
// another one: completing a batch and a retry ack both make the pair deliverable again.
func TestLongPollWokenByAckRelease(t *testing.T) {
	a := ccSetup(t, lpSlowPoll)
	bsrv := testserver.Start(t, testDSN, lpSlowPoll)
	apiA, apiB := newCCAPI(t, a.srv.URL), newCCAPI(t, bsrv.URL)
	lpWaitListening(t, a.srv, apiA)
	lpWaitListening(t, bsrv, apiA)
	a.push("", obj{"payload": 1, "transactionId": "m1"}, obj{"payload": 2, "transactionId": "m2"},
		obj{"payload": 3, "transactionId": "m3"})
	path := "/api/v1/pop/queue/" + a.queue + "?consumerGroup=g"
	first, ok := a.pop(path)
	if !ok || first.Messages[0].TransactionID != "m1" {
		t.Fatalf("first pop %+v", first)
	}
	ackOf := func(p popped, status string) obj {
		return obj{"transactionId": p.Messages[0].TransactionID, "partitionId": p.PartitionID, "leaseId": p.LeaseID,
			"consumerGroup": "g", "status": status}
	}

	// Parked on A while m1 is leased; completing m1 on A wakes it with m2.
	ch := lpParkedPop(t, a.srv, apiA, path+"&wait=true&timeout=10000")
	if r := a.ack(ackOf(first, "completed")); !r.Success || !r.LeaseReleased {
		t.Fatalf("ack m1 %+v", r)
	}
	second := lpRequireWoken(t, ch, time.Now(), "m2")

	// Parked on B while m2 is leased; completing m2 on A wakes it with m3.
	ch = lpParkedPop(t, bsrv, apiB, path+"&wait=true&timeout=10000")
	if r := a.ack(ackOf(second, "completed")); !r.Success || !r.LeaseReleased {
		t.Fatalf("ack m2 %+v", r)
	}
	third := lpRequireWoken(t, ch, time.Now(), "m3")

	// Parked on A while m3 is leased; a retry ack on B wakes it with m3 again.
	ch = lpParkedPop(t, a.srv, apiA, path+"&wait=true&timeout=10000")
	code, body := doURL(t, "POST", bsrv.URL+"/api/v1/ack", ackOf(third, "retry"))
	if code != http.StatusOK {
		t.Fatalf("retry ack: %d %s", code, body)
	}
	again := lpRequireWoken(t, ch, time.Now(), "m3")
	if again.LeaseID == third.LeaseID || again.Messages[0].RetryCount != 0 {
		t.Fatalf("redelivery %+v after lease %s", again, third.LeaseID)
	}
	lpWaitParked(t, a.srv, 0)
	lpWaitParked(t, bsrv, 0)
}

// A pop parked on an instance is woken at once by a push to the same instance.
func TestLongPollWokenBySameInstance(t *testing.T) {
	b := ccSetup(t, lpSlowPoll)
	api := newCCAPI(t, b.srv.URL)
	b.push("", obj{"payload": 0, "transactionId": "old"})
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?autoAck=true"); !ok || p.Messages[0].TransactionID != "old" {
		t.Fatalf("pop %+v", p)
	}
	ch := lpParkedPop(t, b.srv, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=10000")
	b.push("", obj{"payload": 1, "transactionId": "new"})
	lpRequireWoken(t, ch, time.Now(), "new")
	lpWaitParked(t, b.srv, 0)
}

// A parked pop with nothing to deliver answers 204 at its deadline (counted from arrival, and
// kept when a wake-up finds nothing for it); timeout=0 is a single attempt.
func TestLongPollTimeout(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	api := newCCAPI(t, b.srv.URL)
	b.push("p1", obj{"payload": 0})
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?autoAck=true"); !ok {
		t.Fatal("setup pop found nothing")
	}
	timed := func(path string) (time.Duration, lpResult) {
		start := time.Now()
		r := <-lpPop(context.Background(), api, path)
		return time.Since(start), r
	}

	d, r := timed("/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=700")
	if r.err != nil || r.ok || d < 700*time.Millisecond || d > 1400*time.Millisecond {
		t.Fatalf("timeout=700: ok=%v err=%v after %v, want 204 at about 700ms", r.ok, r.err, d)
	}
	t.Logf("timeout=700 answered 204 after %v", d.Round(time.Millisecond))

	d, r = timed("/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=0")
	if r.err != nil || r.ok || d > 500*time.Millisecond {
		t.Fatalf("timeout=0: ok=%v err=%v after %v, want 204 at once", r.ok, r.err, d)
	}

	// Parked on partition p1; a push to p2 of the same queue wakes it, it finds nothing and
	// parks again with its original deadline.
	start := time.Now()
	ch := lpPop(context.Background(), api, "/api/v1/pop/queue/"+b.queue+"/partition/p1?wait=true&timeout=900")
	lpWaitParked(t, b.srv, 1)
	time.Sleep(200 * time.Millisecond)
	b.push("p2", obj{"payload": 2, "transactionId": "other"})
	r = <-ch
	d = time.Since(start)
	if r.err != nil || r.ok || d < 900*time.Millisecond || d > 1600*time.Millisecond {
		t.Fatalf("re-parked pop: ok=%v err=%v after %v, want 204 at about 900ms", r.ok, r.err, d)
	}
	lpWaitParked(t, b.srv, 0)
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/p2"); !ok || p.Messages[0].TransactionID != "other" {
		t.Fatalf("p2 message: %+v", p)
	}
}

// A pop parked on a queue that does not exist yet is answered by the push that creates it.
func TestLongPollQueueCreatedByPush(t *testing.T) {
	b := ccSetup(t, lpSlowPoll)
	api := newCCAPI(t, b.srv.URL)
	other := testserver.Start(t, testDSN, lpSlowPoll)
	otherAPI := newCCAPI(t, other.URL)
	lpWaitListening(t, b.srv, otherAPI)

	local := lpParkedPop(t, b.srv, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=10000")
	b.push("", obj{"payload": 1, "transactionId": "created"})
	lpRequireWoken(t, local, time.Now(), "created")

	remote := b.queue + "-remote"
	ch := lpParkedPop(t, b.srv, api, "/api/v1/pop/queue/"+remote+"?wait=true&timeout=10000")
	if _, err := otherAPI.push(context.Background(), obj{"queue": remote, "payload": 2, "transactionId": "created-remote"}); err != nil {
		t.Fatal(err)
	}
	lpRequireWoken(t, ch, time.Now(), "created-remote")
	lpWaitParked(t, b.srv, 0)
}

// A namespace/task pop is woken by a push into a queue whose labels match, on the same
// instance and across instances, and not answered by a push into a queue that does not match.
func TestLongPollNamespaceTask(t *testing.T) {
	b := ccSetup(t, lpSlowPoll)
	api := newCCAPI(t, b.srv.URL)
	other := testserver.Start(t, testDSN, lpSlowPoll)
	otherAPI := newCCAPI(t, other.URL)
	lpWaitListening(t, b.srv, otherAPI)
	ns := fmt.Sprintf("lpns%d", time.Now().UnixNano())
	path := "/api/v1/pop?namespace=" + ns + "&task=work&wait=true&timeout=10000&autoAck=true"

	for i, pusher := range []*ccAPI{api, otherAPI} {
		ch := lpParkedPop(t, b.srv, api, path)
		if _, err := pusher.push(context.Background(), obj{"queue": ns + ".other", "payload": i}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		select {
		case r := <-ch:
			t.Fatalf("pusher %d: answered by a push into a queue of another task: %+v", i, r)
		default:
		}
		key := fmt.Sprintf("match-%d", i)
		if _, err := pusher.push(context.Background(), obj{"queue": ns + ".work.q", "payload": i, "transactionId": key}); err != nil {
			t.Fatal(err)
		}
		p := lpRequireWoken(t, ch, time.Now(), key)
		if p.Messages[0].Queue != ns+".work.q" {
			t.Fatalf("pusher %d: delivered from %s", i, p.Messages[0].Queue)
		}
		lpWaitParked(t, b.srv, 0)
	}
}

// A client that disconnects drops its parked pop; the pop claims nothing afterwards.
func TestLongPollClientDisconnect(t *testing.T) {
	b := ccSetup(t, testserver.Options{})
	api := newCCAPI(t, b.srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := lpPop(ctx, api, "/api/v1/pop/queue/"+b.queue+"?wait=true&timeout=30000&consumerGroup=g")
	lpWaitParked(t, b.srv, 1)
	cancel()
	if r := <-ch; r.err == nil {
		t.Fatalf("cancelled pop answered %+v", r)
	}
	lpWaitParked(t, b.srv, 0)

	// A later message goes to a live consumer, not to the dropped pop.
	b.push("", obj{"payload": 1, "transactionId": "after"})
	if p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?consumerGroup=g"); !ok || p.Messages[0].TransactionID != "after" || p.Messages[0].RetryCount != 0 {
		t.Fatalf("pop after disconnect %+v", p)
	}
}

// On shutdown (the hub closes) every parked pop answers 204 at once, and so does a long poll
// that arrives afterwards.
func TestLongPollShutdown(t *testing.T) {
	b := ccSetup(t, lpSlowPoll)
	api := newCCAPI(t, b.srv.URL)
	path := "/api/v1/pop/queue/" + b.queue + "?wait=true&timeout=10000"
	first := lpParkedPop(t, b.srv, api, path)
	second := lpParkedPop(t, b.srv, api, path+"&consumerGroup=g")
	closed := time.Now()
	b.srv.Broker.Hub().Close()
	for i, ch := range []<-chan lpResult{first, second} {
		select {
		case r := <-ch:
			if r.err != nil || r.ok || r.done.Sub(closed) > time.Second {
				t.Fatalf("parked pop %d on shutdown: ok=%v err=%v after %v", i, r.ok, r.err, r.done.Sub(closed))
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("parked pop %d still waiting after shutdown", i)
		}
	}
	lpWaitParked(t, b.srv, 0)
	start := time.Now()
	if r := <-lpPop(context.Background(), api, path); r.err != nil || r.ok || time.Since(start) > time.Second {
		t.Fatalf("long poll after shutdown: ok=%v err=%v after %v", r.ok, r.err, time.Since(start))
	}
}
