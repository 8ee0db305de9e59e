package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

func TestValidationPopParams(t *testing.T) {
	b := fakeSetup(t)
	paths := map[string]string{
		"queue":     valPopPath(b.queue, ""),
		"partition": "/api/v1/pop/queue/" + b.queue + "/partition/p",
		"namespace": "/api/v1/pop?namespace=" + url.QueryEscape(b.queue),
	}
	cases := []struct {
		query url.Values
		msg   string
	}{
		{url.Values{"consumerGroup": {valName(t, "", 256)}}, "consumerGroup exceeds 255 characters"},
		{url.Values{"subscriptionMode": {"bogus"}}, "Invalid subscriptionMode: bogus"},
		{url.Values{"subscriptionMode": {"ALL"}}, "Invalid subscriptionMode: ALL"},
		{url.Values{"subscriptionMode": {"new only"}}, "Invalid subscriptionMode: new only"},
		{url.Values{"subscriptionFrom": {"yesterday"}}, "Invalid subscriptionFrom: yesterday"},
		{url.Values{"subscriptionFrom": {"NOW"}}, "Invalid subscriptionFrom: NOW"},
		{url.Values{"subscriptionFrom": {"2026-13-01T00:00:00Z"}}, "Invalid subscriptionFrom: 2026-13-01T00:00:00Z"},
		{url.Values{"subscriptionFrom": {"2026-02-30T00:00:00Z"}}, "Invalid subscriptionFrom: 2026-02-30T00:00:00Z"},
		{url.Values{"subscriptionFrom": {"2026-01-01"}}, "Invalid subscriptionFrom: 2026-01-01"},
		{url.Values{"subscriptionFrom": {"1700000000"}}, "Invalid subscriptionFrom: 1700000000"},
		// Validated for __QUEUE_MODE__ too, and with a valid mode alongside.
		{url.Values{"subscriptionMode": {"new"}, "subscriptionFrom": {"later"}}, "Invalid subscriptionFrom: later"},
		{url.Values{"consumerGroup": {"g"}, "subscriptionMode": {"x"}}, "Invalid subscriptionMode: x"},
	}
	for form, path := range paths {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", form, i), func(t *testing.T) {
				t.Parallel()
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				r := valSend(t, "GET", b.srv.URL+path+sep+c.query.Encode(), nil)
				valWantError(t, r, http.StatusBadRequest, c.msg)
			})
		}
	}
}

func TestValidationPopAcceptedParams(t *testing.T) {
	b := setup(t, testserver.Options{})
	// Valid values on an unknown queue: no 400, just nothing to deliver.
	missing := b.queue + "-missing"
	queries := []url.Values{
		{"consumerGroup": {valName(t, "g-", 255)}},
		{"consumerGroup": {""}},
		{"subscriptionMode": {""}},
		{"subscriptionMode": {"all"}},
		{"subscriptionMode": {"new"}},
		{"subscriptionMode": {"new-only"}},
		{"subscriptionMode": {"from_beginning"}},
		{"subscriptionFrom": {""}},
		{"subscriptionFrom": {"now"}},
		{"subscriptionFrom": {"2026-01-01T00:00:00Z"}},
		{"subscriptionFrom": {"2026-01-01 00:00:00"}},
		{"subscriptionFrom": {"2026-01-01T00:00:00.123456789+02:00"}},
		{"consumerGroup": {"g"}, "subscriptionFrom": {"2026-01-01T00:00:00-05:30"}},
	}
	for i, q := range queries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			valWantNoContent(t, valSend(t, "GET", b.srv.URL+valPopPath(missing, q.Encode()), nil))
		})
	}
	t.Run("unencoded plus offset", func(t *testing.T) {
		t.Parallel()
		// "+02:00" unencoded decodes to " 02:00", which reads as "+02:00" (docs/api/README.md §2.3).
		valWantNoContent(t, valSend(t, "GET", b.srv.URL+valPopPath(missing, "subscriptionFrom=2026-01-01T00:00:00+02:00"), nil))
	})
}

func TestValidationPopNamespaceRequired(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, q := range []string{"", "?namespace=", "?task=", "?namespace=&task=", "?batch=5", "?queue=" + b.queue} {
		valWantError(t, b.valDo("GET", "/api/v1/pop"+q, nil), http.StatusBadRequest, "namespace or task is required")
	}
	// One filter is enough; a namespace nobody has answers 204.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace="+b.queue+"-none", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?task="+b.queue+"-none", nil))
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace=&task="+b.queue+"-none", nil))
}

func TestValidationPopEmptyOutcomes(t *testing.T) {
	// The default long-poll deadline (30 s) is longer than valClient's timeout, so a pop that
	// waits where it must not fails the test instead of passing late.
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1})
	for _, path := range []string{
		valPopPath(b.queue+"-missing", ""),
		valPopPath(b.queue+"-missing", "consumerGroup=g"),
		"/api/v1/pop/queue/" + b.queue + "-missing/partition/p",
		"/api/v1/pop/queue/" + b.queue + "/partition/nope",
		"/api/v1/pop/queue/" + b.queue + "/partition/Default",
		// timeout=0 is one attempt even with wait=true.
		"/api/v1/pop/queue/" + b.queue + "/partition/nope?wait=true&timeout=0",
		valPopPath(b.queue+"-missing", "wait=true&timeout=0"),
		valPopPath(b.queue, "wait=true&timeout=0&consumerGroup=g&subscriptionMode=new"),
		"/api/v1/pop?namespace=" + b.queue + "-missing&wait=true&timeout=0",
	} {
		valWantNoContent(t, b.valDo("GET", path, nil))
	}
	// The message is still deliverable.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || len(p.Messages) != 1 {
		t.Fatalf("pop %+v", p)
	}
}

func TestValidationPopTimeoutFallback(t *testing.T) {
	const def = 400 * time.Millisecond
	b := setup(t, testserver.Options{DefaultTimeout: def})
	// A negative or malformed timeout is the default: the long poll lasts that long, then 204.
	// wait is true for "true" or "1" in any case (docs/api/README.md §2.1).
	for _, q := range []string{"wait=true&timeout=-5", "wait=true&timeout=abc", "wait=true&timeout=", "wait=true",
		"wait=1", "wait=TRUE", "wait=True&wait=false"} {
		start := time.Now()
		valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, q), nil))
		if waited := time.Since(start); waited < def-50*time.Millisecond {
			t.Fatalf("%s: answered after %v, before the default deadline %v", q, waited, def)
		}
	}
}

func TestValidationPopEmptyGroupIsQueueMode(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("", obj{"payload": 1})
	p, ok := b.pop(valPopPath(b.queue, "consumerGroup="))
	if !ok || p.ConsumerGroup != "__QUEUE_MODE__" || len(p.Messages) != 1 ||
		p.Messages[0].ConsumerGroup != "__QUEUE_MODE__" {
		t.Fatalf("pop %+v", p)
	}
	// The same group: its lease hides the message from a pop that names no group.
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))
}

func TestValidationPopBatchFallback(t *testing.T) {
	b := setup(t, testserver.Options{})
	b.push("p", obj{"payload": 1}, obj{"payload": 2}, obj{"payload": 3})
	cases := []struct {
		query string
		want  int
	}{
		{"batch=0", 1},
		{"batch=-3", 1},
		{"batch=abc", 1},
		{"batch=", 1},
		{"batch=1.5", 1},
		{"batch=99999999999999999999", 1},
		{"batch=2", 2},
		{"batch=2&batch=3", 2},
		{"batch=10&partitions=0", 3},
		{"batch=10&partitions=x", 3},
	}
	for i, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			// Each case reads as a group of its own, so they do not lease each other out.
			p, ok := b.pop(valPopPath(b.queue, fmt.Sprintf("consumerGroup=g%d&%s", i, c.query)))
			if !ok || len(p.Messages) != c.want {
				t.Fatalf("got %d messages, want %d: %+v", len(p.Messages), c.want, p)
			}
		})
	}
}

func TestValidationPopEncodedSlash(t *testing.T) {
	b := setup(t, testserver.Options{})
	queue, partition := b.queue+"/sub", "a/b"
	b.push("", obj{"queue": queue, "partition": partition, "payload": "slash"})
	b.push("", obj{"queue": b.queue, "payload": "plain"})
	// /pop/queue/<q>/sub would be an unknown route; %2F keeps the slash inside the segment.
	valWantError(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/sub", nil), http.StatusNotFound, "Not found")
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "%2Fsub/partition/a%2fb")
	if !ok || p.Queue != queue || p.Partition != partition || len(p.Messages) != 1 ||
		string(p.Messages[0].Data) != `"slash"` {
		t.Fatalf("pop %+v", p)
	}
	// The queue without the suffix is a different queue.
	if p, ok := b.pop(valPopPath(b.queue, "")); !ok || string(p.Messages[0].Data) != `"plain"` {
		t.Fatalf("pop %+v", p)
	}
}

// ---------------------------------------------------------------------------------------------
// Ack and ack batch
