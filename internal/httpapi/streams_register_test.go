package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/testserver"
)

// Claims S1-S7 of docs/api/streams.md §10: registration.

func TestS01_FirstRegistrationIsFreshAndCreatesNoQueue(t *testing.T) {
	b := setup(t, testserver.Options{})
	sink := b.queue + ".sink"
	r := b.register("orders.per_min", "h1", obj{"sink_queue": sink}, http.StatusOK)
	if !r.Success || !r.Fresh || r.Reset || r.Name != "orders.per_min" || r.ConfigHash != "h1" {
		t.Fatalf("answer %+v", r)
	}
	if _, err := uuid.Parse(r.QueryID); err != nil || len(r.QueryID) != 36 || strings.ToLower(r.QueryID) != r.QueryID {
		t.Fatalf("query_id %q", r.QueryID)
	}
	for _, q := range []string{b.queue, sink} {
		if code, body := b.do("GET", "/api/v1/resources/queues/"+q, nil); code != http.StatusNotFound {
			t.Fatalf("queue %s: %d %s", q, code, body)
		}
	}
}

func TestS02_SameHashAgainKeepsTheQueryID(t *testing.T) {
	b := setup(t, testserver.Options{})
	first := b.register(b.queue, "h1", nil, http.StatusOK)
	again := b.register(b.queue, "h1", obj{"sink_queue": "other"}, http.StatusOK)
	if again.QueryID != first.QueryID || again.Fresh || again.Reset || !again.Success {
		t.Fatalf("first %+v again %+v", first, again)
	}
}

func TestS03_OtherHashWithoutResetIs409(t *testing.T) {
	b := setup(t, testserver.Options{})
	first := b.register(b.queue, "h1", nil, http.StatusOK)
	code, body := b.do("POST", "/streams/v1/queries", obj{"name": b.queue, "source_queue": b.queue, "config_hash": "h2"})
	if code != http.StatusConflict {
		t.Fatalf("%d %s", code, body)
	}
	got := decode[map[string]any](t, body)
	want := map[string]any{"success": false, "query_id": first.QueryID, "name": b.queue,
		"error": "config_hash mismatch: operator chain changed for queryId '" + b.queue + "'. Pass reset:true to wipe existing state, or use a new queryId."}
	if len(got) != len(want) {
		t.Fatalf("answer %s", body)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v (%s)", k, got[k], v, body)
		}
	}
	if r := b.register(b.queue, "h1", nil, http.StatusOK); r.QueryID != first.QueryID {
		t.Fatalf("after the mismatch: %+v", r)
	}
}

func TestS04_OtherHashWithResetWipesState(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.cycle(s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}}}))
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := b.register(b.queue, "h2", obj{"reset": true}, http.StatusOK)
	if r.QueryID != s.queryID || !r.Reset || r.Fresh || r.ConfigHash != "h2" {
		t.Fatalf("answer %+v", r)
	}
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 0 {
		t.Fatalf("rows after reset %+v", rows)
	}
}

func TestS05_ResetWithTheSameHashKeepsState(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.cycle(s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}}}))
	r := b.register(b.queue, "h1", obj{"reset": true}, http.StatusOK)
	if r.Reset || r.Fresh || r.QueryID != s.queryID {
		t.Fatalf("answer %+v", r)
	}
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestS06_RegistrationValidation(t *testing.T) {
	b := setup(t, testserver.Options{})
	long := strings.Repeat("x", 256)
	cases := []struct {
		body any
		want string
	}{
		{obj{}, "name is required"},
		{obj{"name": ""}, "name is required"},
		{obj{"name": 5}, "name is required"},
		{obj{"name": long}, "name exceeds 255 characters"},
		{obj{"name": "n"}, "source_queue is required"},
		{obj{"name": "n", "source_queue": long}, "source_queue exceeds 255 characters"},
		{obj{"name": "n", "source_queue": "s"}, "config_hash is required"},
		{obj{"name": "n", "source_queue": "s", "config_hash": long}, "config_hash exceeds 255 characters"},
		{obj{"name": "n", "source_queue": "s", "config_hash": "h", "sink_queue": 1}, "sink_queue must be a string"},
		{obj{"name": "n", "source_queue": "s", "config_hash": "h", "sink_queue": long}, "sink_queue exceeds 255 characters"},
		{[]any{}, "request body must be a JSON object"},
		{"5", "request body must be a JSON object"},
		{obj{"name": "n", "source_queue": "s", "config_hash": "h", "reset": "yes"}, "reset must be a boolean"},
	}
	for _, c := range cases {
		code, body := b.do("POST", "/streams/v1/queries", c.body)
		if code != http.StatusBadRequest || decode[map[string]string](t, body)["error"] != c.want {
			t.Errorf("%v: %d %s, want 400 %s", c.body, code, body, c.want)
		}
	}
	code, body := b.do("GET", "/streams/v1/queries", nil)
	if code != http.StatusOK || strings.Contains(string(body), `"n"`) {
		t.Fatalf("a rejected registration was stored: %s", body)
	}
}

func TestS07_ConcurrentFirstRegistrations(t *testing.T) {
	b := setup(t, testserver.Options{})
	race := func(name, h1, h2 string) []int {
		codes := make([]int, 2)
		ids := make([]string, 2)
		var wg sync.WaitGroup
		for i, h := range []string{h1, h2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, body, err := roundTrip(t.Context(), http.DefaultClient, "POST", b.srv.URL+"/streams/v1/queries",
					obj{"name": name, "source_queue": b.queue, "config_hash": h}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				r := decode[streamRegistered](t, body)
				ids[i] = r.QueryID
				if r.Success {
					codes[i] = http.StatusOK
					if r.Fresh {
						codes[i] = 1 // fresh
					}
				} else {
					codes[i] = http.StatusConflict
				}
			}()
		}
		wg.Wait()
		if ids[0] != ids[1] {
			t.Errorf("%s: two query ids %v", name, ids)
		}
		return codes
	}
	for i := 0; i < 5; i++ {
		n := b.queue + "-d" + string(rune('a'+i))
		c := race(n, "h1", "h2")
		if !(c[0] == 1 && c[1] == http.StatusConflict || c[1] == 1 && c[0] == http.StatusConflict) {
			t.Fatalf("different hashes: %v", c)
		}
		n = b.queue + "-s" + string(rune('a'+i))
		c = race(n, "h1", "h1")
		if !(c[0] == 1 && c[1] == http.StatusOK || c[1] == 1 && c[0] == http.StatusOK) {
			t.Fatalf("equal hashes: %v", c)
		}
	}
}
