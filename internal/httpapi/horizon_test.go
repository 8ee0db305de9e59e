package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testserver"
)

// A session holding a snapshot past XMIN_WARN_SECONDS shows on /metrics/prometheus (its age,
// the warning gauge at 1) and in postgres-stats' horizon, which the dashboard's System page
// reads (docs/operations.md, "A held snapshot horizon").
func TestHeldHorizonShowsOnMetricsAndPostgresStats(t *testing.T) {
	b := stIsolated(t, testserver.Options{XminWarn: time.Second})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pgtest.HoldSnapshot(t, conn, "")
	time.Sleep(1200 * time.Millisecond) // real elapsed time, not an ordering: the snapshot ages past 1 s

	mfs := scrape(t, b.srv.URL)
	if v, ok := sample(mfs, "queen_db_oldest_xmin_age_seconds"); !ok || v < 1 {
		t.Errorf("queen_db_oldest_xmin_age_seconds = %v (present %v) with a snapshot held for 1.2 s", v, ok)
	}
	if v, ok := sample(mfs, "queen_db_oldest_xmin_warning"); !ok || v != 1 {
		t.Errorf("queen_db_oldest_xmin_warning = %v (present %v) past XMIN_WARN_SECONDS=1", v, ok)
	}
	for _, src := range []string{"transaction", "replication", "replication_catalog"} {
		if _, ok := sample(mfs, "queen_db_oldest_xmin_age_transactions", "source", src); !ok {
			t.Errorf("queen_db_oldest_xmin_age_transactions{source=%q} missing", src)
		}
	}
	if _, ok := sample(mfs, "queen_db_replication_xmin_holders"); !ok {
		t.Error("queen_db_replication_xmin_holders missing")
	}
	// The hot sets' rewrites (docs/operations.md): each set and outcome, counted from 0.
	for _, set := range []string{"consumers", "partition_heads", "partition_work"} {
		for _, outcome := range []string{"compacted", "skipped"} {
			if _, ok := sample(mfs, "queen_hot_set_compactions_total", "set", set, "outcome", outcome); !ok {
				t.Errorf("queen_hot_set_compactions_total{set=%q,outcome=%q} missing", set, outcome)
			}
		}
	}

	pg := admShape(t, stGet[obj](b, "/api/v1/analytics/postgres-stats", http.StatusOK), "database", "tables", "horizon")
	h := admShape(t, pg["horizon"], "ageSeconds", "warnSeconds", "warning", "holder", "replication")
	if h["ageSeconds"].(float64) < 1 || h["warnSeconds"].(float64) != 1 || h["warning"] != true {
		t.Errorf("horizon %v", h)
	}
	admShape(t, h["holder"], "pid", "applicationName", "state", "backendType", "xactStart", "ageSeconds", "xidAge", "hidden")
}
