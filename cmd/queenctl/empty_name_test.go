package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An empty name put into a route's path (docs/api/README.md §2.9, Empty names) is a 404 of a route the broker
// has: the broker answers as for an unknown path ("Not found", an empty segment fills no
// parameter), but the command is supported and the thing named does not exist. queenctl says
// "not found" with exit 3, naming the thing, and never "does not support this command yet".
func TestEmptyNameIsNotFoundNotUnsupported(t *testing.T) {
	b := setup(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queues", "get", ""}, "queenctl queues get: Queue not found (the name is empty)\n"},
		{[]string{"queues", "delete", ""}, "queenctl queues delete: Queue not found (the name is empty)\n"},
		{[]string{"partitions", "list", ""}, "queenctl partitions list: Queue not found (the name is empty)\n"},
		{[]string{"groups", "get", ""}, "queenctl groups get: Consumer group not found (the name is empty)\n"},
		{[]string{"groups", "delete", ""}, "queenctl groups delete: Consumer group not found (the name is empty)\n"},
		{[]string{"traces", "by-name", ""}, "queenctl traces by-name: Trace name not found (the name is empty)\n"},
	} {
		r := b.ctl(t, "", c.args...)
		if r.code != exitNotFound || r.stderr != c.want {
			t.Errorf("queenctl %q: exit %d, stderr %q; want exit %d, stderr %q", c.args, r.code, r.stderr, exitNotFound, c.want)
		}
	}
	// A missing thing with a name still gets the broker's own message.
	r := b.ctl(t, "", "queues", "get", "no-such-queue").want(t, exitNotFound)
	if r.stderr != "queenctl queues get: Queue not found\n" {
		t.Errorf("stderr %q", r.stderr)
	}
}

// "not supported" stays for a route the broker does not have: a 404 with the router's generic
// body for a path without an empty segment. A 404 naming what is missing is "not found".
func TestNotSupportedOnlyForAnUnknownRoute(t *testing.T) {
	answer := `{"error":"Not found"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	b := &bundle{url: srv.URL}
	r := b.ctl(t, "", "queues", "get", "orders").want(t, exitFailure)
	if !strings.Contains(r.stderr, "the broker does not support this command yet (GET "+srv.URL+"/api/v1/resources/queues/orders answered 404 Not found)") {
		t.Errorf("unknown route: stderr %q", r.stderr)
	}
	answer = `{"error":"Queue not found"}`
	r = b.ctl(t, "", "queues", "get", "orders").want(t, exitNotFound)
	if r.stderr != "queenctl queues get: Queue not found\n" {
		t.Errorf("missing queue: stderr %q", r.stderr)
	}
}

// emptyPathName reads only the API path: a base URL with a path of its own, even one with an
// empty segment, is not an empty name.
func TestEmptyPathName(t *testing.T) {
	for _, c := range []struct {
		url, kind string
		ok        bool
	}{
		{"http://h/api/v1/resources/queues/", "Queue", true},
		{"http://h/api/v1/resources/queues/orders", "", false},
		{"http://h/api/v1/consumer-groups/g/queues//seek", "Queue", true},
		{"http://h/api/v1/consumer-groups/g/queues/q/partitions//seek", "Partition", true},
		{"http://h/api/v1/messages/0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90/", "Message", true},
		{"http://h/streams/v1/queries/", "Stream query", true},
		{"http://h//proxy/api/v1/resources/queues/orders", "", false},
		{"http://h/api/v1/bogus", "", false},
	} {
		if kind, ok := emptyPathName(c.url); kind != c.kind || ok != c.ok {
			t.Errorf("emptyPathName(%q) = %q, %v; want %q, %v", c.url, kind, ok, c.kind, c.ok)
		}
	}
}
