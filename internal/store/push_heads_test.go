package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A push call reads each of its partitions' heads once and updates it once, whatever its number
// of items: a call of 1,000 items spread over 450 partitions scans the heads' primary key at most
// twice per partition. The batch push once probed it once per item with the whole list of the call's
// partitions in the index condition, one descent per listed partition each: quadratic, and
// spread pushes ran at half their speed (bench/HISTORY.md). PostgreSQL's own counter of index
// scans (pg_stat_user_indexes.idx_scan) tells the two apart.
func TestPushReadsEachPartitionHeadOnce(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "push_heads_once")
	ctx := context.Background()
	const parts, items = 450, 1000
	rows := func(round int) []PushRow {
		out := make([]PushRow, items)
		for i := range out {
			out[i] = PushRow{Queue: "spread", Partition: fmt.Sprint("p", i%parts), Key: fmt.Sprint("r", round, "-", i),
				ID: uuid.NewString(), Payload: []byte(`{}`)}
		}
		return out
	}
	// The first call creates the partitions; after five, PL/pgSQL may keep a generic plan of each
	// statement (its partition list a parameter), which is where a per-item probe showed.
	for round := range 8 {
		if _, err := s.Push(ctx, rows(round)); err != nil {
			t.Fatal(err)
		}
	}
	before := indexScans(t, s, "partition_heads_pkey")
	res, err := s.Push(ctx, rows(8))
	if err != nil || len(res) != items {
		t.Fatalf("push: %d results, %v", len(res), err)
	}
	if n := indexScans(t, s, "partition_heads_pkey") - before; n > 2*parts {
		t.Fatalf("one push of %d items over %d partitions scanned partition_heads_pkey %d times; want at most two per partition (its read and its update)",
			items, parts, n)
	}
}

// indexScans returns the index scans counted so far of index name, or of every index of table
// name, in the test's schema; a partitioned one's are its partitions'.
func indexScans(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	return statSum(t, s, `SELECT coalesce(sum(idx_scan), 0)::bigint FROM pg_stat_user_indexes
		WHERE schemaname = current_schema() AND (indexrelname = $1 OR relname = $1
		   OR indexrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass($1))
		   OR relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass($1)))`, name)
}

// seqScans returns the sequential scans counted so far of table name in the test's schema (a
// partitioned one's: its partitions').
func seqScans(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	return statSum(t, s, `SELECT coalesce(sum(seq_scan), 0)::bigint FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND (relname = $1
		   OR relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass($1)))`, name)
}

// statSum runs query, a sum over the statistics views, once every pooled connection of s has
// sent its pending statistics and in a fresh statistics snapshot.
func statSum(t *testing.T, s *Store, query, name string) int64 {
	t.Helper()
	flushAll(t, s)
	var n int64
	err := s.withConn(context.Background(), func(ctx context.Context, c *pgxpool.Conn) error {
		if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return err
		}
		return c.QueryRow(ctx, query, name).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// flushAll makes every pooled connection of s send its pending statistics now (PostgreSQL 15
// flushes a backend's at most once a second otherwise).
func flushAll(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	conns := make([]*pgxpool.Conn, 0, 4)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range s.pool.Stat().TotalConns() {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
	}
}
