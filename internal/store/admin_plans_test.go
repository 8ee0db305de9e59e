package store

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Admin reads are planned for their arguments each time (sql/queries/admin.sql): a connection
// that had cached a generic plan from the statement's first runs on nearly empty tables kept
// using it at 10,000 partitions. The setting lasts for the read's transaction only, so the
// pushes and pops that share the pool keep their cached plans.
func TestAdminReadsUseCustomPlansForTheirTransactionOnly(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "admin_plans")
	const show = "SELECT current_setting('plan_cache_mode')"
	for range 8 { // past the five runs after which a prepared statement may turn generic
		var single, inBatch string
		if found, err := s.queryOne(ctx, show, nil, &single); err != nil || !found || single != "force_custom_plan" {
			t.Fatalf("queryOne ran with plan_cache_mode %q (found %v, err %v), want force_custom_plan", single, found, err)
		}
		all, err := queryAll(ctx, s, show, nil, func(r rowScanner, v *string) error { return r.Scan(v) })
		if err != nil || len(all) != 1 || all[0] != "force_custom_plan" {
			t.Fatalf("queryAll ran with plan_cache_mode %v (err %v), want force_custom_plan", all, err)
		}
		err = s.queryBatch(ctx, batchQuery{show, nil, scanInto(&inBatch)})
		if err != nil || inBatch != "force_custom_plan" {
			t.Fatalf("queryBatch ran with plan_cache_mode %q (err %v), want force_custom_plan", inBatch, err)
		}
	}
	var after string
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, show).Scan(&after)
	})
	if err != nil || after != "auto" {
		t.Fatalf("a statement outside admin reads ran with plan_cache_mode %q (err %v), want the default auto", after, err)
	}
}
