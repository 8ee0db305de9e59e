package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// Claims S42-S47 and S49-S52 of docs/api/streams.md §10: state reads, listing, deletion and
// the cleanup events of §1.

// shard is the state/get body of the stream's popped partition, extended by extra.
func (s *stream) shard(extra obj) obj {
	body := obj{"query_id": s.queryID, "partition_id": s.pop.PartitionID}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func (s *stream) upsert(kv ...any) {
	s.t.Helper()
	var ops []obj
	for i := 0; i < len(kv); i += 2 {
		ops = append(ops, obj{"type": "upsert", "key": kv[i], "value": kv[i+1]})
	}
	if r := s.cycle(s.body(obj{"state_ops": ops})); !r.Success {
		s.t.Fatalf("%+v", r)
	}
}

func keysOf(rows []streamRow) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Key)
	}
	return out
}

func TestS42_WholeShardInCodePointOrder(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("b", 1, "a", 1, "B", 1, "é", 1, "z", 1, "a\u001fx", 1)
	want := []string{"B", "a", "a\u001fx", "b", "z", "é"}
	for _, extra := range []obj{{}, {"keys": nil}, {"keys": []string{}}} {
		rows := s.state(s.shard(extra))
		if got := keysOf(rows); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: keys %q", extra, got)
		}
	}
	first := s.state(s.shard(obj{"keys": []string{"a"}}))[0].UpdatedAt
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", first); err != nil {
		t.Fatalf("updated_at %q", first)
	}
	// updated_at has millisecond precision: upsert until a millisecond has passed.
	testkit.Eventually(t, time.Minute, 5*time.Millisecond, func() error {
		s.upsert("a", 2)
		if now := s.state(s.shard(obj{"keys": []string{"a"}}))[0].UpdatedAt; now <= first {
			return fmt.Errorf("updated_at %s, was %s", now, first)
		}
		return nil
	})
}

func TestS43_KeysFilter(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("a", 1, "b", 2)
	if got := keysOf(s.state(s.shard(obj{"keys": []string{"a", "zz"}}))); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("keys %q", got)
	}
}

func TestS44_PrefixIsLiteral(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("tumb:60\u001fw1", 1, "tumb:600\u001fw", 1, "abc", 1, "a_c", 1, "a%", 1, "x", 1)
	if got := keysOf(s.state(s.shard(obj{"key_prefix": "tumb:60\u001f"}))); !reflect.DeepEqual(got, []string{"tumb:60\u001fw1"}) {
		t.Fatalf("keys %q", got)
	}
	if got := keysOf(s.state(s.shard(obj{"key_prefix": "a_"}))); !reflect.DeepEqual(got, []string{"a_c"}) {
		t.Fatalf("keys %q", got)
	}
	if got := keysOf(s.state(s.shard(obj{"key_prefix": "a%"}))); !reflect.DeepEqual(got, []string{"a%"}) {
		t.Fatalf("keys %q", got)
	}
}

func TestS45_RipeFilter(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("w1", obj{"windowEnd": 1000}, "w2", obj{"windowEnd": 2000.5}, "w3", obj{"windowEnd": "1000"},
		"w4", obj{"acc": 1}, "w5", 5, "w6", obj{"windowEnd": 999})
	got := keysOf(s.state(s.shard(obj{"ripe_at_or_before": 1000})))
	if !reflect.DeepEqual(got, []string{"w1", "w6"}) {
		t.Fatalf("keys %q", got)
	}
	got = keysOf(s.state(s.shard(obj{"ripe_at_or_before": 3000, "key_prefix": "w2"})))
	if !reflect.DeepEqual(got, []string{"w2"}) {
		t.Fatalf("keys %q", got)
	}
}

func TestS46_ShardsAreIndependent(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	b.push("Q", obj{"payload": 1})
	other, _ := b.pop("/api/v1/pop/queue/" + b.queue + "/partition/Q?wait=false")
	q2 := b.register(b.queue+"-2", "h", nil, http.StatusOK).QueryID
	s.upsert("k", 1)
	if r := s.cycle(obj{"query_id": s.queryID, "partition_id": other.PartitionID, "state_ops": []obj{{"type": "upsert", "key": "k", "value": 2}}}); !r.Success {
		t.Fatal(r)
	}
	if r := s.cycle(obj{"query_id": q2, "partition_id": s.pop.PartitionID, "state_ops": []obj{{"type": "upsert", "key": "k", "value": 3}}}); !r.Success {
		t.Fatal(r)
	}
	for body, want := range map[*obj]string{
		{"query_id": s.queryID, "partition_id": s.pop.PartitionID}: "1",
		{"query_id": s.queryID, "partition_id": other.PartitionID}: "2",
		{"query_id": q2, "partition_id": s.pop.PartitionID}:        "3",
	} {
		rows := s.state(*body)
		if len(rows) != 1 || string(rows[0].Value) != want {
			t.Fatalf("%v: %+v", *body, rows)
		}
	}
}

func TestS47_StateGetAnswers(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	code, body := b.do("POST", "/streams/v1/state/get", obj{"query_id": uuid.NewString(), "partition_id": s.pop.PartitionID})
	if code != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"error":"Query not found"}` {
		t.Fatalf("%d %s", code, body)
	}
	code, body = b.do("POST", "/streams/v1/state/get", obj{"query_id": s.queryID, "partition_id": uuid.NewString()})
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"success":true,"rows":[]}` {
		t.Fatalf("%d %s", code, body)
	}
	for _, c := range []struct {
		body obj
		want string
	}{
		{s.shard(obj{"keys": "x"}), "keys must be an array of strings"},
		{s.shard(obj{"keys": []any{"a", 1}}), "keys must be an array of strings"},
		{s.shard(obj{"key_prefix": 1}), "key_prefix must be a string"},
		{s.shard(obj{"ripe_at_or_before": "1"}), "ripe_at_or_before must be a number"},
		{obj{"partition_id": s.pop.PartitionID}, "query_id is required"},
		{obj{"query_id": "x", "partition_id": s.pop.PartitionID}, "query_id must be a UUID"},
		{obj{"query_id": s.queryID}, "partition_id is required"},
		{obj{"query_id": s.queryID, "partition_id": "x"}, "partition_id must be a UUID"},
	} {
		b.want400("/streams/v1/state/get", c.body, c.want)
	}
}

type listedQuery struct {
	QueryID     string  `json:"query_id"`
	Name        string  `json:"name"`
	SourceQueue string  `json:"source_queue"`
	SinkQueue   *string `json:"sink_queue"`
	ConfigHash  string  `json:"config_hash"`
	StateRows   int64   `json:"state_rows"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

// listed finds name in GET /streams/v1/queries.
func (b *bundle) listed(name string) (listedQuery, bool) {
	b.t.Helper()
	code, body := b.do("GET", "/streams/v1/queries", nil)
	if code != http.StatusOK {
		b.t.Fatalf("%d %s", code, body)
	}
	for _, q := range decode[struct {
		Queries []listedQuery `json:"queries"`
	}](b.t, body).Queries {
		if q.Name == name {
			return q, true
		}
	}
	return listedQuery{}, false
}

func TestS49_Listing(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("a", 1, "b", 2)
	q, ok := b.listed(b.queue)
	if !ok || q.QueryID != s.queryID || q.SourceQueue != b.queue || q.SinkQueue != nil || q.ConfigHash != "h1" || q.StateRows != 2 {
		t.Fatalf("%v %+v", ok, q)
	}
	for _, ts := range []string{q.CreatedAt, q.UpdatedAt} {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", ts); err != nil {
			t.Fatalf("time %q", ts)
		}
	}
	b.register(b.queue, "h1", obj{"sink_queue": "out"}, http.StatusOK)
	if q, _ := b.listed(b.queue); q.SinkQueue == nil || *q.SinkQueue != "out" {
		t.Fatalf("%+v", q)
	}
}

func TestS50_DeleteQuery(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("a", 1, "b", 2, "c", 3)
	code, body := b.do("DELETE", "/streams/v1/queries/"+url.PathEscape(b.queue), nil)
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"deleted":true,"name":"`+b.queue+`","existed":true,"state_rows_deleted":3}` {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := b.do("POST", "/streams/v1/cycle", s.body(nil)); code != http.StatusNotFound {
		t.Fatalf("cycle after deletion: %d", code)
	}
	if code, _ := b.do("POST", "/streams/v1/state/get", s.shard(nil)); code != http.StatusNotFound {
		t.Fatalf("state after deletion: %d", code)
	}
	if r := b.register(b.queue, "h2", nil, http.StatusOK); !r.Fresh || r.QueryID == s.queryID {
		t.Fatalf("%+v", r)
	}
	code, body = b.do("DELETE", "/streams/v1/queries/none-"+url.PathEscape(b.queue), nil)
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"deleted":true,"name":"none-`+b.queue+`","existed":false,"state_rows_deleted":0}` {
		t.Fatalf("%d %s", code, body)
	}
	// The consumer group stays: the stream continues from its cursor.
	if n := countRows(t, "SELECT count(*) FROM consumers WHERE consumer_group = $1", s.group); n != 1 {
		t.Fatalf("%d consumer rows", n)
	}
}

func TestS51_QueueDeletionDeletesItsState(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 1)
	s.upsert("a", 1, "b", 2)
	if code, body := b.do("DELETE", "/api/v1/resources/queues/"+b.queue, nil); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	q, ok := b.listed(b.queue)
	if !ok || q.StateRows != 0 || q.QueryID != s.queryID {
		t.Fatalf("%v %+v", ok, q)
	}
	if n := countRows(t, "SELECT count(*) FROM stream_shards WHERE query_id = $1", s.queryID); n != 0 {
		t.Fatalf("%d shards left", n)
	}
}

func TestS52_GroupDeletionAndSeekKeepState(t *testing.T) {
	b := setup(t, testserver.Options{})
	s := newStream(t, b, 2)
	s.upsert("a", 1)
	if r := s.cycle(s.body(obj{"ack": s.ackOf(2)})); !r.Success {
		t.Fatal(r)
	}
	path := "/api/v1/consumer-groups/" + url.PathEscape(s.group) + "/queues/" + url.PathEscape(b.queue)
	if code, body := b.do("POST", path+"/seek", obj{"toEnd": false, "timestamp": "2000-01-01T00:00:00.000Z"}); code != http.StatusOK {
		t.Fatalf("seek: %d %s", code, body)
	}
	if rows := s.state(s.shard(nil)); len(rows) != 1 {
		t.Fatalf("after seek %+v", rows)
	}
	if code, body := b.do("DELETE", path, nil); code != http.StatusOK {
		t.Fatalf("delete group: %d %s", code, body)
	}
	if rows := s.state(s.shard(nil)); len(rows) != 1 {
		t.Fatalf("after group deletion %+v", rows)
	}
}

// The idle empty partition removed by retention (docs/api/streams.md §1 event table) takes its
// state rows with it, for every query; the registrations stay.
func TestStreamsIdlePartitionCleanupDeletesItsState(t *testing.T) {
	b := setup(t, testserver.Options{FakeClock: true, Maintenance: &maintenance.Config{PartitionCleanupDays: 1}})
	s := newStream(t, b, 1)
	s.upsert("a", 1)
	q2 := b.register(b.queue+"-2", "h", nil, http.StatusOK).QueryID
	if r := s.cycle(obj{"query_id": q2, "partition_id": s.pop.PartitionID, "state_ops": []obj{{"type": "upsert", "key": "k"}}}); !r.Success {
		t.Fatal(r)
	}
	if r := s.cycle(s.body(obj{"ack": s.ackOf(1)})); !r.Success {
		t.Fatal(r)
	}
	// Consumed, then removed (as retention would once their time is up): the partition is empty.
	stateExec(t, "DELETE FROM messages WHERE partition_id = $1", s.pop.PartitionID)
	b.srv.Clock.Advance(3 * 24 * time.Hour)
	// The cleanup skips a partition another session holds locked, rather than wait: the run of
	// another test's broker on the same database (another clock, so another idea of idle) may
	// hold it for a moment. The next run takes it, as a broker's next tick would.
	testkit.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		if _, err := b.srv.Jobs.RunOnce(context.Background(), mq.JobRetention); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, "SELECT count(*) FROM partitions WHERE id = $1", s.pop.PartitionID); n != 0 {
			return errors.New("the partition was not removed")
		}
		return nil
	})
	if n := countRows(t, "SELECT count(*) FROM stream_state WHERE partition_id = $1", s.pop.PartitionID); n != 0 {
		t.Fatalf("%d state rows left", n)
	}
	for _, name := range []string{b.queue, b.queue + "-2"} {
		if q, ok := b.listed(name); !ok || q.StateRows != 0 {
			t.Fatalf("%s: %v %+v", name, ok, q)
		}
	}
}
