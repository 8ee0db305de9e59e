package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// postJSON sends body to the broker and decodes the answer into out.
func postJSON(t *testing.T, b *bundle, method, path string, body, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// deadLetter pushes keys into queue and moves each to the DLQ; it returns their DLQ ids, in
// key order.
func deadLetter(t *testing.T, b *bundle, queue string, keys ...string) []string {
	t.Helper()
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = map[string]any{"queue": queue, "partition": "p", "transactionId": k, "payload": map[string]any{"k": k}}
	}
	var pushed []struct {
		PartitionID string `json:"partition_id"`
	}
	postJSON(t, b, "POST", "/api/v1/push", map[string]any{"items": items}, &pushed)
	for _, k := range keys {
		postJSON(t, b, "POST", fmt.Sprintf("/api/v1/messages/%s/%s/dlq", pushed[0].PartitionID, k), map[string]any{}, nil)
	}
	resp, err := http.Get(b.url + "/api/v1/dlq?queue=" + queue)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Messages []struct {
			DLQID         string `json:"dlqId"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		for _, m := range page.Messages {
			if m.TransactionID == k {
				ids[i] = m.DLQID
			}
		}
		if ids[i] == "" {
			t.Fatalf("no DLQ entry for %s: %+v", k, page)
		}
	}
	return ids
}

func TestDLQDelete(t *testing.T) {
	b := setup(t)
	ids := deadLetter(t, b, "dlqdel", "a", "b", "c")

	r := b.ctl(t, "", "dlq", "delete", ids[0]).want(t, exitOK)
	golden(t, "dlq_delete_table", r.stdout)
	r = b.ctl(t, "", "dlq", "delete", ids[0], "-o", "json").want(t, exitOK) // again: harmless
	golden(t, "dlq_delete_again_json", r.stdout)

	r = b.ctl(t, "", "dlq", "delete", "--queue", "dlqdel", "--limit", "1", "-o", "json").want(t, exitOK)
	var res struct{ Deleted, Remaining int }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Deleted != 1 || res.Remaining != 1 {
		t.Fatalf("by filter, limit 1: %s %v", r.stdout, err)
	}
	r = b.ctl(t, "", "dlq", "delete", "--queue", "dlqdel", "-o", "json").want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Deleted != 1 || res.Remaining != 0 {
		t.Fatalf("by filter: %s %v", r.stdout, err)
	}
	if r := b.ctl(t, "", "dlq", "dlqdel", "-o", "json").want(t, exitOK); strings.Contains(r.stdout, `"transactionId"`) {
		t.Fatalf("entries left: %s", r.stdout)
	}

	for args, want := range map[string]string{
		"dlq delete":                    "delete needs DLQ ids, filter flags",
		"dlq delete x --queue q":        "give DLQ ids or filter flags, not both",
		"dlq delete --all --limit 1001": "--limit must be between 1 and 1000",
		"dlq delete --since soon --all": "want a duration",
	} {
		r := b.ctl(t, "", strings.Fields(args)...).want(t, exitUsage)
		if !strings.Contains(r.stderr, want) {
			t.Errorf("%s: stderr %q, want %q", args, r.stderr, want)
		}
	}
}
