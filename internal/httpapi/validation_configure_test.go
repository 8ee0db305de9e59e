package httpapi_test

// Behaviour tests over pidReal HTTP for the input validation and the edge answers of the data
// routes (docs/api/data-api.md, docs/api/README.md §2): every 400 message is exact, every status code is the one
// the API reference lists, and a rejected request writes nothing.

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

func TestValidationConfigureErrors(t *testing.T) {
	b := fakeSetup(t)
	long := strings.Repeat("q", 256)
	cases := []struct {
		name string
		body any
		msg  string
	}{
		{"no queue", `{"options":{}}`, "queue is required"},
		{"queue null", `{"queue":null}`, "queue is required"},
		{"queue number", `{"queue":5}`, "queue is required"},
		{"queue object", `{"queue":{"name":"x"}}`, "queue is required"},
		{"body array", `[{"queue":"x"}]`, "queue is required"},
		{"body string", `"x"`, "queue is required"},
		{"queue 256 ascii", obj{"queue": long}, "queue exceeds 255 characters"},
		{"queue 256 runes", obj{"queue": valName(t, "", 256)}, "queue exceeds 255 characters"},
		{"options array", obj{"queue": b.queue, "options": []any{}}, "options must be an object"},
		{"options string", obj{"queue": b.queue, "options": "leaseTime=1"}, "options must be an object"},
		{"options number", obj{"queue": b.queue, "options": 1}, "options must be an object"},
		{"options bool", obj{"queue": b.queue, "options": true}, "options must be an object"},
		{"queue checked before options", obj{"options": 1}, "queue is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			valWantError(t, valSend(t, "POST", b.srv.URL+"/api/v1/configure", c.body), http.StatusBadRequest, c.msg)
		})
	}
}

// valIntOptions and valBoolOptions are the 16 options of docs/api/concepts.md §2.2 by type.
var (
	valIntOptions = []string{"leaseTime", "retryLimit", "retryDelay", "priority", "maxSize", "ttl",
		"delayedProcessing", "windowBuffer", "retentionSeconds", "completedRetentionSeconds",
		"maxWaitTimeSeconds", "dedupWindowSeconds"}
	valBoolOptions = []string{"deadLetterQueue", "dlqAfterMaxRetries", "retentionEnabled", "encryptionEnabled"}
)

func TestValidationConfigureOptionValues(t *testing.T) {
	b := setup(t, testserver.Options{})
	type badValue struct {
		label string
		value any
	}
	intBad := []badValue{{"string", "10"}, {"negative", -1}, {"fraction", 1.5}, {"bool", true},
		{"object", obj{}}, {"array", []any{1}}}
	boolBad := []badValue{{"int", 1}, {"zero", 0}, {"string", "true"}, {"object", obj{}}}
	check := func(name string, bad []badValue) {
		for _, v := range bad {
			t.Run(name+"/"+v.label, func(t *testing.T) {
				t.Parallel()
				r := valSend(t, "POST", b.srv.URL+"/api/v1/configure",
					obj{"queue": b.queue, "options": obj{name: v.value}})
				valWantError(t, r, http.StatusBadRequest, "Invalid value for option "+name)
			})
		}
	}
	for _, name := range valIntOptions {
		check(name, intBad)
	}
	for _, name := range valBoolOptions {
		check(name, boolBad)
	}
	t.Cleanup(func() {
		valWantNoContent(t, b.valDo("GET", "/api/v1/pop/queue/"+b.queue+"/partition/Default", nil))
	})
}

// valDefaultOptions is the options object of a queue configured with none (docs/api/concepts.md §2.2).
var valDefaultOptions = map[string]any{"leaseTime": 300.0, "retryLimit": 3.0, "retryDelay": 1000.0,
	"priority": 0.0, "maxSize": 0.0, "ttl": 3600.0, "deadLetterQueue": false, "dlqAfterMaxRetries": false,
	"delayedProcessing": 0.0, "windowBuffer": 0.0, "retentionSeconds": 0.0, "completedRetentionSeconds": 0.0,
	"retentionEnabled": false, "encryptionEnabled": false, "maxWaitTimeSeconds": 0.0, "dedupWindowSeconds": 900.0}

// valConfigure calls configure and requires 200, returning the decoded answer.
func (b *bundle) valConfigure(body any) map[string]any {
	b.t.Helper()
	r := b.valDo("POST", "/api/v1/configure", body)
	if r.code != http.StatusOK {
		b.t.Fatalf("configure: %d %s", r.code, r.body)
	}
	return decode[map[string]any](b.t, r.body)
}

func TestValidationConfigureResponse(t *testing.T) {
	b := setup(t, testserver.Options{})
	all := map[string]any{"leaseTime": 120.0, "retryLimit": 5.0, "retryDelay": 2500.0, "priority": 7.0,
		"maxSize": 1000.0, "ttl": 60.0, "deadLetterQueue": true, "dlqAfterMaxRetries": true,
		"delayedProcessing": 0.0, "windowBuffer": 0.0, "retentionSeconds": 86400.0,
		"completedRetentionSeconds": 3600.0, "retentionEnabled": true, "encryptionEnabled": true,
		"maxWaitTimeSeconds": 7200.0, "dedupWindowSeconds": 3600.0}
	given := map[string]any{"unknownOption": "ignored", "nullIsAbsent": nil}
	for k, v := range all {
		given[k] = v
	}
	given["retryDelay"] = nil // null means absent: the default
	want := maps.Clone(all)
	want["retryDelay"] = 1000.0

	// Non-string namespace and task are ignored: the derived labels apply.
	res := b.valConfigure(obj{"queue": b.queue, "namespace": 5, "task": obj{}, "options": given})
	valKeys(t, res, "configured", "queueId", "partitionId", "queue", "namespace", "task", "options")
	qid, _ := res["queueId"].(string)
	pid, _ := res["partitionId"].(string)
	if res["configured"] != true || res["queue"] != b.queue || res["namespace"] != b.queue || res["task"] != "" ||
		!valUUIDRe.MatchString(qid) || !valUUIDRe.MatchString(pid) {
		t.Fatalf("configure answer %v", res)
	}
	opts, _ := res["options"].(map[string]any)
	valKeys(t, opts, valKeysOf(valDefaultOptions)...)
	if !valEqualJSON(opts, want) {
		t.Fatalf("options %v, want %v", opts, want)
	}

	// A second configure keeps the queue and its Default partition, and replaces every option.
	res = b.valConfigure(obj{"queue": b.queue})
	if res["queueId"] != qid || res["partitionId"] != pid {
		t.Fatalf("reconfigure changed ids: %v (was %s, %s)", res, qid, pid)
	}
	if !valEqualJSON(res["options"], valDefaultOptions) {
		t.Fatalf("options after a configure without options %v, want the defaults", res["options"])
	}
	res = b.valConfigure(obj{"queue": b.queue, "options": nil})
	if !valEqualJSON(res["options"], valDefaultOptions) || res["partitionId"] != pid {
		t.Fatalf("options:null answer %v", res)
	}

	// A push without a partition writes into that very Default partition.
	p := b.push("", obj{"payload": 1})
	if p[0].PartitionID != pid {
		t.Fatalf("push went to partition %s, Default is %s", p[0].PartitionID, pid)
	}
}

func TestValidationConfigureAfterPush(t *testing.T) {
	b := setup(t, testserver.Options{})
	// The push creates the queue and its Default partition; configure reports that partition.
	p := b.push("", obj{"payload": 1})
	res := b.valConfigure(obj{"queue": b.queue, "namespace": "", "task": "t"})
	if res["partitionId"] != p[0].PartitionID || res["namespace"] != "" || res["task"] != "t" {
		t.Fatalf("configure after push: %v, pushed into %s", res, p[0].PartitionID)
	}
	again := b.valConfigure(obj{"queue": b.queue})
	if again["queueId"] != res["queueId"] || again["partitionId"] != p[0].PartitionID {
		t.Fatalf("second configure %v, first %v", again, res)
	}
}

func TestValidationConfigureReplacesOptions(t *testing.T) {
	b := setup(t, testserver.Options{})
	// A long delayedProcessing hides the message; a configure that omits the option brings
	// back the default 0, and the message becomes visible.
	b.valConfigure(obj{"queue": b.queue, "namespace": "ns-" + b.queue, "task": "t",
		"options": obj{"delayedProcessing": 3600, "priority": 9}})
	b.push("", obj{"payload": "hidden"})
	valWantNoContent(t, b.valDo("GET", valPopPath(b.queue, ""), nil))

	res := b.valConfigure(obj{"queue": b.queue})
	if res["namespace"] != b.queue || res["task"] != "" {
		t.Fatalf("labels not back to the derived ones: %v", res)
	}
	if !valEqualJSON(res["options"], valDefaultOptions) {
		t.Fatalf("options %v, want the defaults", res["options"])
	}
	// The labels in force are the derived ones too: the configured namespace finds nothing
	// although the message is now visible, the derived one finds it.
	valWantNoContent(t, b.valDo("GET", "/api/v1/pop?namespace="+url.QueryEscape("ns-"+b.queue), nil))
	if p, ok := b.pop("/api/v1/pop?namespace=" + url.QueryEscape(b.queue)); !ok || len(p.Messages) != 1 {
		t.Fatalf("message still hidden after the reconfigure: %+v", p)
	}
}

func TestValidationConfigureLongNames(t *testing.T) {
	b := setup(t, testserver.Options{})
	name := valName(t, b.queue+"-", 255) // 255 characters, far more than 255 bytes
	res := b.valConfigure(obj{"queue": name})
	if res["queue"] != name || res["namespace"] != name {
		t.Fatalf("configure answer %v", res)
	}
}

func TestValidationLabelDerivation(t *testing.T) {
	b := setup(t, testserver.Options{})
	cases := []struct {
		suffix, ns, task string
	}{
		{"", "", ""},
		{".requested", "", "requested"},
		{".invoice.created", "", "invoice"},
		{".a.b.c", "", "a"},
		{".", "", ""},
		{"..x", "", ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			// Each case has a namespace of its own, so namespace pops see only its queues.
			base := fmt.Sprintf("%s-%d", b.queue, i)
			configured, pushed := base+"-c"+c.suffix, base+"-p"+c.suffix
			ns, task := base+"-c"+c.ns, c.task
			res := b.valConfigure(obj{"queue": configured, "namespace": nil, "task": nil})
			if res["namespace"] != ns || res["task"] != task {
				t.Fatalf("configure %q: namespace %q task %q, want %q %q", configured, res["namespace"], res["task"], ns, task)
			}
			// An implicitly created queue derives the same labels: a namespace/task pop finds it.
			b.push("", obj{"queue": pushed, "payload": c.suffix})
			q := url.Values{"namespace": {base + "-p" + c.ns}}
			if task != "" {
				q.Set("task", task)
			}
			p, ok := b.pop("/api/v1/pop?" + q.Encode())
			if !ok || p.Queue != pushed || len(p.Messages) != 1 {
				t.Fatalf("namespace pop %v: %+v", q, p)
			}
			if task != "" {
				q.Set("task", task+"x")
				valWantNoContent(t, b.valDo("GET", "/api/v1/pop?"+q.Encode(), nil))
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// POST /api/v1/push
