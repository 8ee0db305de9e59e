package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/testserver"
)

// Claims S8-S37 of docs/api/streams.md §10: the cycle.

// popGroup pops the stream's group from its queue (batch 100, no wait); ok false on 204.
func (s *stream) popGroup() (popped, bool) {
	s.t.Helper()
	return s.bundle.pop("/api/v1/pop/queue/" + s.queue + "?batch=100&wait=false&consumerGroup=" + s.group)
}

// sinkMessages pops everything in queue (queue mode, one batch) and returns it.
func (b *bundle) popAll(queue string) []string {
	b.t.Helper()
	var out []string
	for {
		p, ok := b.pop("/api/v1/pop/queue/" + queue + "?batch=1000&wait=false&consumerGroup=check")
		if !ok {
			return out
		}
		for _, m := range p.Messages {
			out = append(out, string(m.Data))
		}
	}
}

// countRows counts rows of a query over the package database.
func countRows(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := stateDB(t).QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// cursorOf is the group's cursor and live lease on the popped partition.
func (s *stream) cursorOf() (int64, *string) {
	s.t.Helper()
	var cur int64
	var lease *string
	err := stateDB(s.t).QueryRow(context.Background(),
		"SELECT cursor, lease_id::text FROM consumers WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group).Scan(&cur, &lease)
	if err != nil {
		s.t.Fatal(err)
	}
	return cur, lease
}

func TestS08_CycleCommitsStatePushAndAck(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 3)
	sink := b.queue + ".sink"
	r := s.cycle(s.body(obj{
		"state_ops":  []obj{{"type": "upsert", "key": "tumb:60\u001fw\u001fk", "value": obj{"acc": obj{"sum": 6}}}},
		"push_items": []obj{{"queue": sink, "partition": "P", "payload": obj{"sum": 6}}},
		"ack":        s.ackOf(3), "release_lease": true,
	}))
	if !r.Success || r.StateOpsApplied != 1 || r.AckResult == nil || !r.AckResult.Success || r.AckResult.Count != 3 ||
		!r.AckResult.LeaseReleased || r.AckResult.DLQ || r.QueueName != b.queue || r.QueryID != s.queryID ||
		r.PartitionID != s.pop.PartitionID || len(r.PushResults) != 1 {
		t.Fatalf("answer %+v", r)
	}
	rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID})
	if len(rows) != 1 || rows[0].Key != "tumb:60\u001fw\u001fk" || string(rows[0].Value) != `{"acc":{"sum":6}}` {
		t.Fatalf("rows %+v", rows)
	}
	if got := b.popAll(sink); len(got) != 1 || got[0] != `{"sum":6}` {
		t.Fatalf("sink %v", got)
	}
	if _, ok := s.popGroup(); ok {
		t.Fatal("the group's next pop found messages")
	}
}

func TestS09_PushResultShape(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	code, body := b.do("POST", "/streams/v1/cycle", s.body(obj{"push_items": []obj{{"queue": sink, "payload": 1}}}))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var raw struct {
		PushResults []map[string]any `json:"push_results"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || len(raw.PushResults) != 1 {
		t.Fatalf("%s", body)
	}
	p := raw.PushResults[0]
	keys := []string{"index", "transaction_id", "status", "message_id", "partition_id", "trace_id", "queueName"}
	if len(p) != len(keys) {
		t.Fatalf("keys of %v", p)
	}
	for _, k := range keys {
		if _, ok := p[k]; !ok {
			t.Fatalf("no %s in %v", k, p)
		}
	}
	id, err := uuid.Parse(p["message_id"].(string))
	if p["index"] != 0.0 || p["status"] != "queued" || err != nil || id.Version() != 7 || p["trace_id"] != nil ||
		p["queueName"] != sink || p["transaction_id"] != p["message_id"] {
		t.Fatalf("result %v", p)
	}
	if _, err := uuid.Parse(p["partition_id"].(string)); err != nil {
		t.Fatalf("partition_id %v", p)
	}
}

func TestS10_FiftyItemsPopInOrder(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	items := make([]obj, 50)
	for i := range items {
		items[i] = obj{"queue": sink, "partition": "one", "payload": i}
	}
	if r := s.cycle(s.body(obj{"push_items": items})); !r.Success || len(r.PushResults) != 50 {
		t.Fatalf("%+v", r)
	}
	got := b.popAll(sink)
	if len(got) != 50 {
		t.Fatalf("%d messages", len(got))
	}
	for i, m := range got {
		if m != strconv.Itoa(i) {
			t.Fatalf("message %d is %s", i, m)
		}
	}
}

func TestS11_TakenTransactionIDIsDuplicate(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	stored := b.push("", obj{"queue": sink, "partition": "x", "transactionId": "taken", "payload": 1})[0]
	r := s.cycle(s.body(obj{
		"state_ops":  []obj{{"type": "upsert", "key": "k"}},
		"push_items": []obj{{"queue": sink, "partition": "x", "transactionId": "taken", "payload": 2}},
	}))
	if !r.Success || len(r.PushResults) != 1 || r.PushResults[0].Status != "duplicate" ||
		r.PushResults[0].MessageID != stored.MessageID || r.PushResults[0].TransactionID != "taken" {
		t.Fatalf("%+v", r)
	}
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 1 {
		t.Fatalf("the cycle did not commit: %+v", rows)
	}
}

func TestS12_ItemDefaults(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	trace := uuid.NewString()
	r := s.cycle(s.body(obj{"push_items": []obj{{"queue": sink, "traceId": strings.ToUpper(trace)}}}))
	if !r.Success || r.PushResults[0].TraceID == nil || *r.PushResults[0].TraceID != trace {
		t.Fatalf("%+v", r)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + sink + "?wait=false")
	if !ok || len(p.Messages) != 1 {
		t.Fatal("nothing in the sink")
	}
	m := p.Messages[0]
	if m.Partition != "Default" || string(m.Data) != "{}" || m.TraceID == nil || *m.TraceID != trace {
		t.Fatalf("message %+v", m)
	}
}

// rolledBack checks the rollback answer of docs/api/streams.md §4.4 and that nothing was written.
func (s *stream) rolledBack(body obj, wantErr string) {
	s.t.Helper()
	code, out := s.do("POST", "/streams/v1/cycle", body)
	if code != http.StatusOK {
		s.t.Fatalf("%d %s", code, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		s.t.Fatal(err)
	}
	want := map[string]any{"success": false, "query_id": s.queryID, "partition_id": s.pop.PartitionID,
		"queueName": s.queue, "state_ops_applied": 0.0, "push_results": []any{}, "ack_result": nil, "error": wantErr}
	if !reflect.DeepEqual(got, want) {
		s.t.Fatalf("answer %s, want %v", out, want)
	}
}

func TestS13_RandomLeaseRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 2)
	sink := b.queue + ".sink"
	ack := s.ackOf(2)
	ack["leaseId"] = uuid.Must(uuid.NewV7()).String()
	s.rolledBack(s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}},
		"push_items": []obj{{"queue": sink, "payload": 1}}, "ack": ack}), "Invalid or expired lease")
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 0 {
		t.Fatalf("rows %+v", rows)
	}
	if got := b.popAll(sink); len(got) != 0 {
		t.Fatalf("sink %v", got)
	}
	if cur, lease := s.cursorOf(); cur != 0 || lease == nil || *lease != s.pop.LeaseID {
		t.Fatalf("cursor %d lease %v", cur, lease)
	}
}

func TestS14_UnknownTransactionIDRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	ack := s.ackOf(1)
	ack["transactionId"] = "nope"
	s.rolledBack(s.body(obj{"ack": ack, "state_ops": []obj{{"type": "upsert", "key": "k"}}}), "Message not found")
}

func TestS15_RepeatedCycleIsRejected(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 2)
	sink := b.queue + ".sink"
	body := s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}, {"type": "upsert", "key": "n", "value": 1}},
		"push_items": []obj{{"queue": sink, "payload": "once"}}, "ack": s.ackOf(2)})
	if r := s.cycle(body); !r.Success {
		t.Fatalf("%+v", r)
	}
	before := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID})
	body["state_ops"] = []obj{{"type": "upsert", "key": "k", "value": 2}, {"type": "delete", "key": "n"}}
	s.rolledBack(body, "Message already committed")
	if after := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); !reflect.DeepEqual(before, after) {
		t.Fatalf("state %+v, was %+v", after, before)
	}
	if got := b.popAll(sink); len(got) != 1 {
		t.Fatalf("sink %v", got)
	}
}

func TestS16_NeverDeliveredMessageIsBeyondTheBatch(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	b.push("P", obj{"payload": 1, "transactionId": "later"})
	s.rolledBack(s.body(obj{"ack": obj{"transactionId": "later", "leaseId": s.pop.LeaseID}}), "Message is beyond the leased batch")
	// Lease-less, and on a group that never popped.
	s.rolledBack(s.body(obj{"ack": obj{"transactionId": "later"}}), "Message is beyond the leased batch")
	s.rolledBack(s.body(obj{"consumer_group": "never", "ack": obj{"transactionId": "m1"}}), "Message is beyond the leased batch")
}

func TestS17_ExpiredLeaseRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 1})
	s := newStream(t, b, 2)
	b.srv.Clock.Advance(2500 * time.Millisecond)
	s.rolledBack(s.body(obj{"ack": s.ackOf(2)}), "Invalid or expired lease")
}

// seq is the payloads ("n" field) of popped messages.
func seq(p popped) []int {
	var out []int
	for _, m := range p.Messages {
		var v struct{ N int }
		_ = json.Unmarshal(m.Data, &v)
		out = append(out, v.N)
	}
	return out
}

func TestS18_PartialAckReleasesTheRest(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 10)
	body := s.body(obj{"ack": s.ackOf(3)})
	delete(body, "release_lease")
	r := s.cycle(body)
	if !r.Success || !r.AckResult.LeaseReleased || r.AckResult.Count != 3 {
		t.Fatalf("%+v", r)
	}
	p, ok := s.popGroup()
	if !ok || !reflect.DeepEqual(seq(p), []int{4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("pop %v %v", ok, seq(p))
	}
	for _, m := range p.Messages {
		if m.RetryCount != 0 {
			t.Fatalf("retryCount %d", m.RetryCount)
		}
	}
}

func TestS19_PartialAckKeepingTheLease(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true})
	b.configure(obj{"leaseTime": 2})
	s := newStream(t, b, 10)
	r := s.cycle(s.body(obj{"ack": s.ackOf(3), "release_lease": false}))
	if !r.Success || r.AckResult.LeaseReleased || r.AckResult.Count != 3 {
		t.Fatalf("%+v", r)
	}
	if _, ok := s.popGroup(); ok {
		t.Fatal("a pop within the lease got messages")
	}
	b.srv.Clock.Advance(3 * time.Second)
	p, ok := s.popGroup()
	if !ok || !reflect.DeepEqual(seq(p), []int{4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("pop after expiry %v %v", ok, seq(p))
	}
}

func TestS20_SeveralAcksUnderOneLease(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 10)
	for _, k := range []int{3, 6} {
		r := s.cycle(s.body(obj{"ack": s.ackOf(k), "release_lease": false}))
		if !r.Success || r.AckResult.Count != 3 || r.AckResult.LeaseReleased {
			t.Fatalf("ack %d: %+v", k, r)
		}
	}
}

func TestS21_AckOfTheLastMessageReleasesAnyway(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 4)
	r := s.cycle(s.body(obj{"ack": s.ackOf(4), "release_lease": false}))
	if !r.Success || !r.AckResult.LeaseReleased || r.AckResult.Count != 4 {
		t.Fatalf("%+v", r)
	}
	b.push("P", obj{"payload": obj{"n": 5}})
	if p, ok := s.popGroup(); !ok || !reflect.DeepEqual(seq(p), []int{5}) {
		t.Fatalf("pop %v %v", ok, seq(p))
	}
}

func TestS22_CountIsWhatWasConsumed(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 5)
	ack := s.ackOf(5)
	ack["count"] = 1
	r := s.cycle(s.body(obj{"ack": ack}))
	if !r.Success || r.AckResult.Count != 5 {
		t.Fatalf("%+v", r)
	}
	if n := countRows(t, "SELECT messages_consumed FROM consumers WHERE partition_id = $1 AND consumer_group = $2",
		s.pop.PartitionID, s.group); n != 5 {
		t.Fatalf("consumed %d", n)
	}
}

func TestS23_CycleWithoutAckLeavesTheCursor(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 3)
	for _, body := range []obj{
		s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "a"}}}),
		s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "b"}}, "ack": nil, "push_items": []obj{{"queue": b.queue + ".sink"}}}),
	} {
		r := s.cycle(body)
		if !r.Success || r.AckResult != nil || r.StateOpsApplied != 1 {
			t.Fatalf("%+v", r)
		}
	}
	if cur, lease := s.cursorOf(); cur != 0 || lease == nil || *lease != s.pop.LeaseID {
		t.Fatalf("cursor %d lease %v", cur, lease)
	}
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if got := b.popAll(b.queue + ".sink"); len(got) != 1 {
		t.Fatalf("sink %v", got)
	}
}

// dlqMessages lists the DLQ entries of b's queue: transactionId -> errorMessage.
func (b *bundle) dlqMessages() map[string]string {
	b.t.Helper()
	code, body := b.do("GET", "/api/v1/dlq?queue="+b.queue, nil)
	if code != http.StatusOK {
		b.t.Fatalf("dlq: %d %s", code, body)
	}
	var v struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
			ErrorMessage  string `json:"errorMessage"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		b.t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range v.Messages {
		out[m.TransactionID] = m.ErrorMessage
	}
	return out
}

func TestS24_DeadLetterWithReason(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 2)
	ack := s.ackOf(2)
	ack["status"], ack["error"] = "dlq", "poison"
	r := s.cycle(s.body(obj{"ack": ack}))
	if !r.Success || !r.AckResult.DLQ || r.AckResult.Count != 2 {
		t.Fatalf("%+v", r)
	}
	if d := b.dlqMessages(); len(d) != 1 || d["m2"] != "poison" {
		t.Fatalf("dlq %v", d)
	}
	if _, ok := s.popGroup(); ok {
		t.Fatal("the dead-lettered message came back")
	}
}

func TestS25_FailedAndSuccessStatuses(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 3)
	ack := s.ackOf(1)
	ack["status"] = "failed"
	r := s.cycle(s.body(obj{"ack": ack, "release_lease": false}))
	if !r.Success || !r.AckResult.DLQ {
		t.Fatalf("%+v", r)
	}
	if d := b.dlqMessages(); d["m1"] != "Streaming cycle reported failure" {
		t.Fatalf("dlq %v", d)
	}
	ack = s.ackOf(3)
	ack["status"] = "success"
	r = s.cycle(s.body(obj{"ack": ack}))
	if !r.Success || r.AckResult.DLQ || r.AckResult.Count != 2 || !r.AckResult.LeaseReleased {
		t.Fatalf("%+v", r)
	}
	if d := b.dlqMessages(); len(d) != 1 {
		t.Fatalf("dlq %v", d)
	}
}

// wantStream400 sends a cycle-like body to path and requires 400 with msg.
func (b *bundle) want400(path string, body any, msg string) {
	b.t.Helper()
	code, out := b.do("POST", path, body)
	if code != http.StatusBadRequest {
		b.t.Fatalf("%v: %d %s, want 400 %s", body, code, out, msg)
	}
	if got := decode[map[string]any](b.t, out); len(got) != 1 || got["error"] != msg {
		b.t.Fatalf("%v: %s, want %s", body, out, msg)
	}
}

func TestS26_RetryStatusIs400(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	ack := s.ackOf(1)
	ack["status"] = "retry"
	b.want400("/streams/v1/cycle", s.body(obj{"ack": ack}), "Unknown ack.status: retry")
}

func TestS27_CycleValidation(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	valid := obj{"queue": sink, "payload": 1}
	with := func(kv ...any) obj {
		body := s.body(obj{"push_items": []obj{valid}})
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<absent>" {
				delete(body, kv[i].(string))
				continue
			}
			body[kv[i].(string)] = kv[i+1]
		}
		return body
	}
	cases := []struct {
		body obj
		want string
	}{
		{with("query_id", "<absent>"), "query_id is required"},
		{with("query_id", 5), "query_id is required"},
		{with("query_id", "abc"), "query_id must be a UUID"},
		{with("partition_id", "<absent>"), "partition_id is required"},
		{with("partition_id", "abc"), "partition_id must be a UUID"},
		{with("consumer_group", 5), "consumer_group must be a string"},
		{with("consumer_group", strings.Repeat("g", 256)), "consumer_group exceeds 255 characters"},
		{with("release_lease", "no"), "release_lease must be a boolean"},
		{with("state_ops", "x"), "state_ops must be an array"},
		{with("push_items", obj{}), "push_items must be an array"},
		{with("ack", "x"), "ack must be an object"},
		{with("state_ops", []obj{{"type": "merge", "key": "k"}}), "Unknown state_op type: merge"},
		{with("state_ops", []obj{{"key": "k"}}), "Unknown state_op type: null"},
		{with("state_ops", []any{"upsert"}), "Unknown state_op type: null"},
		{with("state_ops", []obj{{"type": "upsert", "key": 1}}), "state_op key must be a string"},
		{with("push_items", []obj{valid, {"payload": 1}}), "Queue must be a string"},
		{with("push_items", []obj{valid, {"queue": sink, "traceId": "x"}}), "TraceId must be a valid UUID"},
		{with("push_items", []obj{valid, {"queue": sink, "partition": 5}}), "Partition must be a string"},
		{with("ack", obj{}), "ack.transactionId is required"},
		{with("ack", obj{"transactionId": ""}), "ack.transactionId is required"},
		{with("ack", obj{"transactionId": "m1", "leaseId": 5}), "ack.leaseId must be a string"},
		{with("ack", obj{"transactionId": "m1", "status": 5}), "Unknown ack.status: null"},
		{with("ack", obj{"transactionId": "m1", "count": -1}), "ack.count must be a non-negative integer"},
		{with("ack", obj{"transactionId": "m1", "count": 1.5}), "ack.count must be a non-negative integer"},
		{with("ack", obj{"transactionId": "m1", "count": "1"}), "ack.count must be a non-negative integer"},
	}
	for _, c := range cases {
		b.want400("/streams/v1/cycle", c.body, c.want)
	}
	b.want400("/streams/v1/cycle", []any{}, "request body must be a JSON object")
	if code, body := b.do("GET", "/api/v1/resources/queues/"+sink, nil); code != http.StatusNotFound {
		t.Fatalf("a rejected cycle created the sink: %d %s", code, body)
	}
	if cur, _ := s.cursorOf(); cur != 0 {
		t.Fatalf("cursor %d", cur)
	}
}

func TestS28_NullArraysAreEmpty(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	r := s.cycle(s.body(obj{"state_ops": nil, "push_items": nil, "ack": s.ackOf(1), "release_lease": nil}))
	if !r.Success || r.StateOpsApplied != 0 || len(r.PushResults) != 0 || r.AckResult.Count != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestS29_UnknownQueryOrPartitionIs404(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	body := s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k"}}, "push_items": []obj{{"queue": sink}}, "ack": s.ackOf(1)})
	body["query_id"] = uuid.Must(uuid.NewV7()).String()
	code, out := b.do("POST", "/streams/v1/cycle", body)
	if code != http.StatusNotFound || strings.TrimSpace(string(out)) != `{"error":"Query not found"}` {
		t.Fatalf("%d %s", code, out)
	}
	body["query_id"], body["partition_id"] = s.queryID, uuid.NewString()
	code, out = b.do("POST", "/streams/v1/cycle", body)
	if code != http.StatusNotFound || strings.TrimSpace(string(out)) != `{"error":"Partition not found"}` {
		t.Fatalf("%d %s", code, out)
	}
	if code, _ := b.do("GET", "/api/v1/resources/queues/"+sink, nil); code != http.StatusNotFound {
		t.Fatal("the sink was created")
	}
	if n := countRows(t, "SELECT count(*) FROM stream_state WHERE query_id = $1", s.queryID); n != 0 {
		t.Fatalf("%d rows", n)
	}
	if cur, _ := s.cursorOf(); cur != 0 {
		t.Fatalf("cursor %d", cur)
	}
}

func TestS30_LaterOpsWin(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	r := s.cycle(s.body(obj{"state_ops": []obj{{"type": "upsert", "key": "k", "value": 1}, {"type": "delete", "key": "k"}}}))
	if !r.Success || r.StateOpsApplied != 2 {
		t.Fatalf("%+v", r)
	}
	if rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}); len(rows) != 0 {
		t.Fatalf("rows %+v", rows)
	}
	r = s.cycle(s.body(obj{"state_ops": []obj{{"type": "delete", "key": "absent"}}}))
	if !r.Success || r.StateOpsApplied != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestS31_ValuesReadBackEqual(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	values := map[string]string{
		"nested": `{"a":{"b":[1,2,{"c":null}]},"d":-1.5e3}`,
		"array":  `[1,"two",true,null]`,
		"number": `42.25`,
		"text":   `"héllo wörld ✓ 日本 \ud83d\ude00"`,
		"null":   `null`,
	}
	var ops []obj
	for k, v := range values {
		ops = append(ops, obj{"type": "upsert", "key": k, "value": json.RawMessage(v)})
	}
	ops = append(ops, obj{"type": "upsert", "key": "absent"})
	if r := s.cycle(s.body(obj{"state_ops": ops})); !r.Success {
		t.Fatalf("%+v", r)
	}
	rows := s.state(obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID})
	if len(rows) != len(values)+1 {
		t.Fatalf("rows %+v", rows)
	}
	for _, row := range rows {
		want := values[row.Key]
		if row.Key == "absent" {
			want = "{}"
		}
		var a, w any
		if json.Unmarshal(row.Value, &a) != nil || json.Unmarshal([]byte(want), &w) != nil || !reflect.DeepEqual(a, w) {
			t.Fatalf("%s: %s, want %s", row.Key, row.Value, want)
		}
	}
}

func TestS32_QueueModeCycle(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 0)
	b.push("P", obj{"payload": 1, "transactionId": "a"}, obj{"payload": 2, "transactionId": "b"})
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&wait=false")
	if !ok {
		t.Fatal("nothing popped")
	}
	r := s.cycle(obj{"query_id": s.queryID, "partition_id": p.PartitionID,
		"ack": obj{"transactionId": "b", "leaseId": p.LeaseID}})
	if !r.Success || r.AckResult.Count != 2 || !r.AckResult.LeaseReleased {
		t.Fatalf("%+v", r)
	}
	if _, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?wait=false"); ok {
		t.Fatal("queue mode pop found messages")
	}
}

func TestS33_OtherGroupsAreUntouched(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 0)
	b.push("P", obj{"payload": obj{"n": 1}, "transactionId": "a"}, obj{"payload": obj{"n": 2}, "transactionId": "b"})
	pa, _ := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&wait=false&consumerGroup=A")
	pb, _ := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=1&wait=false&consumerGroup=B")
	r := s.cycle(obj{"query_id": s.queryID, "partition_id": pa.PartitionID, "consumer_group": "A",
		"ack": obj{"transactionId": "b", "leaseId": pa.LeaseID}})
	if !r.Success {
		t.Fatalf("%+v", r)
	}
	// B still holds its lease on message a, and gets b after acking it.
	if got := b.ack(obj{"transactionId": "a", "partitionId": pb.PartitionID, "leaseId": pb.LeaseID, "consumerGroup": "B"}); !got.Success {
		t.Fatalf("B's ack %+v", got)
	}
	p, ok := b.pop("/api/v1/pop/queue/" + b.queue + "?batch=10&wait=false&consumerGroup=B")
	if !ok || !reflect.DeepEqual(seq(p), []int{2}) {
		t.Fatalf("B's pop %v %v", ok, seq(p))
	}
}

func TestS34_FullSinkRollsBack(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	sink := b.queue + ".sink"
	if code, body := b.do("POST", "/api/v1/configure", obj{"queue": sink, "options": obj{"maxSize": 2}}); code >= 300 {
		t.Fatalf("configure: %d %s", code, body)
	}
	b.push("", obj{"queue": sink, "payload": 1})
	s.rolledBack(s.body(obj{"ack": s.ackOf(1), "push_items": []obj{{"queue": sink}, {"queue": sink}}}),
		`queue "`+sink+`" is full`)
	if cur, _ := s.cursorOf(); cur != 0 {
		t.Fatalf("cursor %d", cur)
	}
	// The ack's rejection is reported first.
	ack := s.ackOf(1)
	ack["transactionId"] = "nope"
	s.rolledBack(s.body(obj{"ack": ack, "push_items": []obj{{"queue": sink}, {"queue": sink}}}), "Message not found")
}
