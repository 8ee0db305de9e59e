package store

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// migrateTo applies the migrations up to version (inclusive) to a new schema, as Migrate did
// for a broker of that version, without the functions: a database made by an earlier release.
func migrateTo(t *testing.T, schema string, version int) {
	t.Helper()
	ctx := context.Background()
	dropSchema(t, schema)
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	migrations, err := listMigrations()
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{"CREATE SCHEMA " + quoteIdent(schema), "SET LOCAL search_path TO " + quoteIdent(schema),
			"CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		for _, m := range migrations {
			if m.version > version {
				break
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A database of the release before tenancy upgrades in place: its queues, messages and
// consumers' places are the default tenant's, served as before, and its keys still deduplicate.
func TestUpgradeKeepsExistingQueuesInTheDefaultTenant(t *testing.T) {
	const schema = "upgrade_tenancy"
	migrateTo(t, schema, 19)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	qid, pid := uuid.NewString(), uuid.NewString()
	for _, q := range []string{
		"SET search_path TO " + quoteIdent(schema),
		"INSERT INTO queues (id, name, namespace, task) VALUES ('" + qid + "', 'legacy', '', '')",
		"INSERT INTO partitions (id, queue_id, name) VALUES ('" + pid + "', '" + qid + "', 'p')",
		"INSERT INTO partition_heads (partition_id, last_position, last_message_at) VALUES ('" + pid + "', 2, now())",
		"INSERT INTO messages (partition_id, position, id, transaction_id, payload, created_at) VALUES " +
			"('" + pid + "', 1, '" + uuid.NewString() + "', 'k1', '{\"n\":1}', now()), " +
			"('" + pid + "', 2, '" + uuid.NewString() + "', 'k2', '{\"n\":2}', now())",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := openSchema(t, schema)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var tenant string
	if err := conn.QueryRow(ctx, "SELECT tenant FROM queue_rows WHERE name = 'legacy'").Scan(&tenant); err != nil || tenant != "" {
		t.Fatalf("the existing queue's tenant after the upgrade: %q, %v; want the default tenant", tenant, err)
	}
	msgs, err := s.Pop(ctx, PopRequest{Queue: "legacy", Group: "__QUEUE_MODE__", Batch: 10, Partitions: 1, AutoAck: true})
	if err != nil || len(msgs) != 2 || msgs[0].TransactionID != "k1" || msgs[1].TransactionID != "k2" {
		t.Fatalf("pop after the upgrade: %d messages, %v; want k1, k2", len(msgs), err)
	}
	res, err := s.Push(ctx, []PushRow{{Queue: "legacy", Partition: "p", Key: "k1", ID: uuid.NewString(), Payload: []byte(`{}`)}})
	if err != nil || len(res) != 1 || res[0].Status != "duplicate" {
		t.Fatalf("a push of a stored key after the upgrade: %+v, %v; want duplicate", res, err)
	}
}

// A database whose messages table is not partitioned yet upgrades in place: its messages
// become seg 0 (messages_keep) with their positions, keys and trace records, its tombstones
// tseg 0, and they are served and deduplicated as before, and a message deleted afterwards takes its trace records along, as
// the foreign key did.
func TestUpgradeKeepsExistingMessagesInSegmentZero(t *testing.T) {
	const schema = "upgrade_segments"
	migrateTo(t, schema, 22)
	gone := uuid.NewString() // a removed message whose key is still taken
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	qid, pid := uuid.NewString(), uuid.NewString()
	for _, q := range []string{
		"SET search_path TO " + quoteIdent(schema),
		"INSERT INTO queue_rows (id, name, namespace, task) VALUES ('" + qid + "', 'legacy', '', '')",
		"INSERT INTO partitions (id, queue_id, name) VALUES ('" + pid + "', '" + qid + "', 'p')",
		"INSERT INTO partition_heads (partition_id, last_position, last_message_at) VALUES ('" + pid + "', 3, now())",
		"INSERT INTO messages (partition_id, position, id, transaction_id, payload, created_at) VALUES " +
			"('" + pid + "', 1, '" + uuid.NewString() + "', 'k1', '{\"n\":1}', now()), " +
			"('" + pid + "', 2, '" + uuid.NewString() + "', 'k2', '{\"n\":2}', now()), " +
			"('" + pid + "', 3, '" + uuid.NewString() + "', 'k3', '{\"n\":3}', now())",
		"INSERT INTO traces (id, partition_id, transaction_id, consumer_group, event_type, worker_id, created_at) VALUES " +
			"('" + uuid.NewString() + "', '" + pid + "', 'k1', '__QUEUE_MODE__', 'info', 'w', now()), " +
			"('" + uuid.NewString() + "', '" + pid + "', 'k2', '__QUEUE_MODE__', 'info', 'w', now())",
		"INSERT INTO dedup_tombstones (partition_id, transaction_id, message_id, created_at) VALUES " +
			"('" + pid + "', 'removed', '" + gone + "', now())",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := openSchema(t, schema)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var kept int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM messages_keep WHERE seg = 0").Scan(&kept); err != nil || kept != 3 {
		t.Fatalf("messages in seg 0 after the upgrade: %d, %v; want 3", kept, err)
	}
	msgs, err := s.Pop(ctx, PopRequest{Queue: "legacy", Group: "__QUEUE_MODE__", Batch: 2, Partitions: 1, AutoAck: true})
	if err != nil || len(msgs) != 2 || msgs[0].TransactionID != "k1" || msgs[1].TransactionID != "k2" {
		t.Fatalf("pop after the upgrade: %+v, %v; want k1, k2", msgs, err)
	}
	res, err := s.Push(ctx, []PushRow{{Queue: "legacy", Partition: "p", Key: "k3", ID: uuid.NewString(), Payload: []byte(`{}`)},
		{Queue: "legacy", Partition: "p", Key: "k4", ID: uuid.NewString(), Payload: []byte(`{}`)},
		{Queue: "legacy", Partition: "p", Key: "removed", ID: uuid.NewString(), Payload: []byte(`{}`)}})
	if err != nil || len(res) != 3 || res[0].Status != "duplicate" || res[1].Status != "queued" ||
		res[2].Status != "duplicate" || res[2].MessageID != gone {
		t.Fatalf("a push of a stored key, a new one and a removed one after the upgrade: %+v, %v; want duplicate, queued, duplicate of %s", res, err, gone)
	}
	msgs, err = s.Pop(ctx, PopRequest{Queue: "legacy", Group: "__QUEUE_MODE__", Batch: 10, Partitions: 1, AutoAck: true})
	if err != nil || len(msgs) != 2 || msgs[0].TransactionID != "k3" || msgs[1].TransactionID != "k4" {
		t.Fatalf("pop after the upgrade: %+v, %v; want k3, then the new k4", msgs, err)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM messages WHERE partition_id = $1 AND position = 1", pid); err != nil {
		t.Fatal(err)
	}
	var traced []string
	rows, err := conn.Query(ctx, "SELECT transaction_id FROM traces ORDER BY 1")
	if err == nil {
		traced, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || !slices.Equal(traced, []string{"k2"}) {
		t.Fatalf("trace records after deleting k1: %v, %v; want only k2's", traced, err)
	}
}
