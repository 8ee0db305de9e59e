package admin

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
)

// The read side's own rules: ids that are not UUIDs name nothing (without a database call),
// payloads are shown decrypted, and writes that change delivery tell the data path. The SQL
// behind each read is tested in the store's suite; the wire shapes in httpapi.

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		ctx := context.Background()
		st, err := store.Open(ctx, store.Options{DSN: dsn, MaxConns: 2, ConnectTimeout: 30 * time.Second})
		if err == nil {
			err = st.Migrate(ctx)
			st.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "migrate:", err)
			return 1
		}
		testDSN = dsn
		return m.Run()
	})
}

// dataPath records what the read side tells the data path (the injected dependency).
type dataPath struct {
	mu     sync.Mutex
	woken  []string
	forgot []string
}

func (d *dataPath) WakeQueues(_ context.Context, queues ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.woken = append(d.woken, queues...)
}

func (d *dataPath) ForgetQueue(_ context.Context, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgot = append(d.forgot, name)
}

type bundle struct {
	st   *store.Store
	data *dataPath
	a    *Admin
	key  *encryption.Key
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{DSN: testDSN, MaxConns: 4, ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	key, err := encryption.ParseKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	d := &dataPath{}
	return &bundle{st: st, data: d, a: New(st, d, key, nil), key: key}
}

// push writes one message as the broker would (sealed when encrypted) and returns its
// partition id.
func (b *bundle) push(t *testing.T, queue, key string, payload []byte, encrypted bool) string {
	t.Helper()
	if encrypted {
		env, err := b.key.Seal(payload)
		if err != nil {
			t.Fatal(err)
		}
		payload = env
	}
	id := mq.CanonicalUUID(newID())
	res, err := b.st.Push(context.Background(), []store.PushRow{{Queue: queue, Partition: "p", Key: key, ID: id,
		Payload: payload, Encrypted: encrypted}})
	if err != nil || len(res) != 1 || res[0].Status != mq.StatusQueued {
		t.Fatalf("push: %+v %v", res, err)
	}
	return res[0].PartitionID
}

func TestMessageDetailDecryptsAndRefusesNonUUIDs(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	pid := b.push(t, "adm-enc", "k1", []byte(`{"secret":1}`), true)
	d, found, err := b.a.MessageDetail(ctx, pid, "k1")
	if err != nil || !found || string(d.Payload) != `{"secret":1}` {
		t.Fatalf("detail: %s %v %v", d.Payload, found, err)
	}
	// Upper-case ids are the same partition; ids that are not UUIDs name none.
	if _, found, err := b.a.MessageDetail(ctx, strings.ToUpper(pid), "k1"); err != nil || !found {
		t.Fatalf("upper-case id: %v %v", found, err)
	}
	for _, bad := range []string{"", "p", pid + "0", "'; DROP TABLE messages; --"} {
		if _, found, err := b.a.MessageDetail(ctx, bad, "k1"); err != nil || found {
			t.Fatalf("%q: found %v, %v", bad, found, err)
		}
		if found, err := b.a.DeleteMessage(ctx, bad, "k1"); err != nil || found {
			t.Fatalf("delete %q: found %v, %v", bad, found, err)
		}
	}
}

func TestWithoutAKeyPayloadsAreShownAsStored(t *testing.T) {
	b := setup(t)
	pid := b.push(t, "adm-nokey", "k1", []byte(`{"secret":2}`), true)
	a := New(b.st, b.data, nil, nil)
	d, found, err := a.MessageDetail(context.Background(), pid, "k1")
	if err != nil || !found || strings.Contains(string(d.Payload), "secret") || !strings.Contains(string(d.Payload), "encrypted") {
		t.Fatalf("detail without key: %s %v %v", d.Payload, found, err)
	}
}

func TestWritesThatChangeDeliveryTellTheDataPath(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.push(t, "adm-groups", "k1", []byte(`{}`), false)
	if _, found, err := b.a.SeekQueue(ctx, "g", "adm-groups", nil); err != nil || !found {
		t.Fatalf("seek: %v %v", found, err)
	}
	if _, err := b.a.DeleteConsumerGroup(ctx, "g", "adm-groups", true); err != nil {
		t.Fatal(err)
	}
	if existed, err := b.a.DeleteQueue(ctx, "adm-groups"); err != nil || !existed {
		t.Fatalf("delete queue: %v %v", existed, err)
	}
	b.data.mu.Lock()
	defer b.data.mu.Unlock()
	if len(b.data.woken) == 0 || b.data.woken[0] != "adm-groups" {
		t.Fatalf("woken %v, want the seeked queue", b.data.woken)
	}
	if len(b.data.forgot) != 1 || b.data.forgot[0] != "adm-groups" {
		t.Fatalf("forgot %v, want the deleted queue", b.data.forgot)
	}
}

func TestAddTraceMintsAnIDAndNeedsTheMessage(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	pid := b.push(t, "adm-trace", "k1", []byte(`{}`), false)
	id, found, err := b.a.AddTrace(ctx, mq.TraceRecord{PartitionID: pid, TransactionID: "k1", Data: []byte(`{"a":1}`)})
	if err != nil || !found || mq.CanonicalUUID(id) != id {
		t.Fatalf("trace: %q %v %v", id, found, err)
	}
	if _, found, err := b.a.AddTrace(ctx, mq.TraceRecord{PartitionID: "nope", TransactionID: "k1", Data: []byte(`{}`)}); err != nil || found {
		t.Fatalf("trace on a non-UUID partition: %v %v", found, err)
	}
}
