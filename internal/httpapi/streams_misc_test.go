package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// Claims S35-S37, S41 and S48 of docs/api/streams.md §10: the write-path rules sink items
// follow, wake-ups, an unavailable database and access levels.

func TestS35_EncryptedSink(t *testing.T) {
	b := setup(t, testserver.Options{EncryptionKey: encKey})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	if code, body := b.do("POST", "/api/v1/configure", obj{"queue": sink, "options": obj{"encryptionEnabled": true}}); code != http.StatusOK {
		t.Fatalf("configure: %d %s", code, body)
	}
	if r := s.cycle(s.body(obj{"push_items": []obj{{"queue": sink, "payload": obj{"secret": 1}}}})); !r.Success {
		t.Fatal(r)
	}
	stored, flags := storedPayloads(t, sink)
	if len(stored) != 1 || !flags[0] {
		t.Fatalf("stored %v %v", stored, flags)
	}
	assertEnvelope(t, stored[0])
	p, ok := b.pop("/api/v1/pop/queue/" + sink + "?wait=false")
	if !ok || string(p.Messages[0].Data) != `{"secret":1}` {
		t.Fatalf("pop %+v", p)
	}
}

func TestS36_SinkMessagesCarryTheTokenSub(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	rw, admin := bearer(authRole(t, "pipeline-9", "read-write")), bearer(authRole(t, "root", "admin"))
	resp, body := authSend(t, "POST", b.srv.URL+"/streams/v1/queries", rw, obj{"name": b.queue, "source_queue": b.queue, "config_hash": "h"})
	authWant(t, resp, body, http.StatusOK, "")
	qid := decode[streamRegistered](t, body).QueryID
	resp, body = authSend(t, "POST", b.srv.URL+"/api/v1/push", rw, obj{"items": []obj{{"queue": b.queue, "payload": 1}}})
	authWant(t, resp, body, http.StatusCreated, "")
	pid := decode[[]pushed](t, body)[0].PartitionID
	sink := b.queue + ".sink"
	forged := uuid.Must(uuid.NewV7()).String()
	resp, body = authSend(t, "POST", b.srv.URL+"/streams/v1/cycle", rw, obj{"query_id": qid, "partition_id": pid,
		"push_items": []obj{{"queue": sink, "payload": 1, "transactionId": "s", "producerSub": "forged", "messageId": forged}}})
	authWant(t, resp, body, http.StatusOK, "")
	r := decode[streamCycled](t, body)
	if !r.Success || r.PushResults[0].MessageID == forged {
		t.Fatalf("%s", body)
	}
	if subs := authPopSubs(t, b.srv.URL, sink, admin); len(subs) != 1 || subs["s"] != "pipeline-9" {
		t.Fatalf("producerSub %v", subs)
	}
}

func TestS37_ParkedSinkPopWakes(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	if code, body := b.do("POST", "/api/v1/configure", obj{"queue": sink, "options": obj{}}); code != http.StatusOK {
		t.Fatalf("configure: %d %s", code, body)
	}
	type answer struct {
		code int
		body []byte
		at   time.Time
	}
	done := make(chan answer, 1)
	go func() {
		resp, body, err := roundTrip(t.Context(), http.DefaultClient, "GET",
			b.srv.URL+"/api/v1/pop/queue/"+sink+"?wait=true&timeout=60000&consumerGroup=check", nil, nil)
		if err != nil {
			t.Error(err)
			done <- answer{}
			return
		}
		done <- answer{resp.StatusCode, body, time.Now()}
	}()
	// Park first: wait until the broker counts the waiting pop.
	waitParked(t, b, sink)
	r := s.cycle(s.body(obj{"push_items": []obj{{"queue": sink, "payload": "woken"}}}))
	answered := time.Now()
	if !r.Success {
		t.Fatal(r)
	}
	a := <-done
	if a.code != http.StatusOK || !strings.Contains(string(a.body), `"woken"`) {
		t.Fatalf("parked pop: %d %s", a.code, a.body)
	}
	t.Logf("the parked pop answered %v after the cycle's answer", a.at.Sub(answered))
	// The claim says within 1 s; a loaded machine is given more, the long poll's 60 s is the failure.
	if d := a.at.Sub(answered); d > 20*time.Second {
		t.Fatalf("woken after %v", d)
	}
}

func TestS41_UnavailableDatabase(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, refusedDSN, testserver.Options{DBConnectionTimeout: 2 * time.Second, DBRequestTimeout: 10 * time.Second})
	id := uuid.NewString()
	cases := []struct {
		method, path string
		body         any
	}{
		{"POST", "/streams/v1/queries", obj{"name": "n", "source_queue": "s", "config_hash": "h"}},
		{"POST", "/streams/v1/cycle", obj{"query_id": id, "partition_id": id, "state_ops": []obj{{"type": "upsert", "key": "k"}},
			"push_items": []obj{{"queue": "x"}}, "ack": obj{"transactionId": "t"}}},
		{"POST", "/streams/v1/state/get", obj{"query_id": id, "partition_id": id}},
		{"GET", "/streams/v1/queries", nil},
		{"DELETE", "/streams/v1/queries/n", nil},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := valRoundTrip(c.method, srv.URL+c.path, c.body)
			if err != nil {
				t.Error(err)
				return
			}
			if r.code != http.StatusServiceUnavailable || strings.TrimSpace(string(r.body)) != `{"error":"Database unavailable"}` {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.code, r.body)
			}
		}()
	}
	wg.Wait()
}

func TestS48_AccessLevels(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	ro, rw, admin := bearer(authRole(t, "ro", "read-only")), bearer(authRole(t, "rw", "read-write")), bearer(authRole(t, "root", "admin"))
	reg := obj{"name": b.queue, "source_queue": b.queue, "config_hash": "h"}
	resp, body := authSend(t, "POST", b.srv.URL+"/streams/v1/queries", ro, reg)
	authWant(t, resp, body, http.StatusForbidden, "Insufficient permissions")
	resp, body = authSend(t, "POST", b.srv.URL+"/streams/v1/queries", rw, reg)
	authWant(t, resp, body, http.StatusOK, "")
	qid := decode[streamRegistered](t, body).QueryID
	resp, body = authSend(t, "POST", b.srv.URL+"/streams/v1/cycle", ro, obj{"query_id": qid, "partition_id": qid})
	authWant(t, resp, body, http.StatusForbidden, "Insufficient permissions")
	resp, body = authSend(t, "POST", b.srv.URL+"/streams/v1/state/get", ro, obj{"query_id": qid, "partition_id": qid})
	authWant(t, resp, body, http.StatusOK, "")
	resp, body = authSend(t, "GET", b.srv.URL+"/streams/v1/queries", ro, nil)
	authWant(t, resp, body, http.StatusOK, "")
	resp, body = authSend(t, "DELETE", b.srv.URL+"/streams/v1/queries/"+b.queue, rw, nil)
	authWant(t, resp, body, http.StatusForbidden, "Insufficient permissions")
	resp, body = authSend(t, "DELETE", b.srv.URL+"/streams/v1/queries/"+b.queue, nil, nil)
	authWant(t, resp, body, http.StatusUnauthorized, "Authentication required")
	resp, body = authSend(t, "DELETE", b.srv.URL+"/streams/v1/queries/"+b.queue, admin, nil)
	authWant(t, resp, body, http.StatusOK, "")
}

// waitParked waits until b's broker holds a parked pop.
func waitParked(t *testing.T, b *bundle, queue string) {
	t.Helper()
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error {
		if b.srv.Broker.Hub().Parked() == 0 {
			return fmt.Errorf("no parked pop on %s", queue)
		}
		return nil
	})
}
