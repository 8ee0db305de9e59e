package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

// The heldxmin scenario measures its windows with the snapshot horizon held from the window
// asked for, reports the hot tables' row versions, and ends the holding session.
func TestHeldXminHoldsTheHorizonFromItsWindowAndLetsGo(t *testing.T) {
	// pgstattuple, as bench/heldxmin.sh installs it: the report scans the tables with it.
	ext, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.Exec(context.Background(), "CREATE EXTENSION IF NOT EXISTS pgstattuple"); err != nil {
		t.Fatal(err)
	}
	ext.Close(context.Background())
	srv := testserver.Start(t, testDSN, testserver.Options{})
	cfg := Config{Server: srv.URL, DSN: testDSN, PayloadBytes: 20, Partitions: 4,
		Windows: 3, Window: time.Second, Producers: 2, Consumers: 2, HoldFrom: 2}
	res, err := Run(context.Background(), "heldxmin", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Windows) != 3 {
		t.Fatalf("%d windows, want 3: %+v", len(res.Windows), res.Windows)
	}
	var popped, pushed int64
	for i, w := range res.Windows {
		t.Logf("window %d held=%v: %.0f pop+ack/s, %.0f push/s, snapshot %s, %d xids", w.Window, w.Held,
			w.PopAckPerSec, w.PushPerSec, w.SnapshotAge.Round(time.Millisecond), w.XminAge)
		held := i >= 1
		if w.Window != i+1 || w.Held != held || (w.SnapshotAge > 0) != held || (w.XminAge > 0) != held || w.Elapsed < time.Second {
			t.Errorf("window %d, want held=%v: %+v", i+1, held, w)
		}
		popped, pushed = popped+w.Popped, pushed+w.Pushed
	}
	if res.Windows[2].SnapshotAge <= res.Windows[1].SnapshotAge {
		t.Errorf("the snapshot did not age from window 2 (%s) to 3 (%s)", res.Windows[1].SnapshotAge, res.Windows[2].SnapshotAge)
	}
	if popped == 0 || pushed == 0 || res.Messages != popped {
		t.Errorf("popped %d, pushed %d, result messages %d", popped, pushed, res.Messages)
	}
	var names []string
	for _, tr := range res.Tables {
		names = append(names, tr.Table)
		t.Logf("%s (%s): live %d, dead %d", tr.Table, res.TablesSource, tr.Live, tr.Dead)
		if tr.Live < 0 || tr.Dead < 0 {
			t.Errorf("table %+v", tr)
		}
	}
	if !slices.Equal(names, heldTables) || !strings.Contains(res.TablesSource, "pgstattuple") {
		t.Errorf("tables %v (from %q), want %v from the statistics and pgstattuple", names, res.TablesSource, heldTables)
	}
	// messages is partitioned (its segments): its rows are its partitions' rows.
	if m := res.Tables[len(res.Tables)-1]; m.Table != "messages" || m.Live == 0 || m.ScannedLive == nil || *m.ScannedLive == 0 {
		t.Errorf("messages %+v: want its stored messages counted", m)
	}

	conn, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	testkit.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		var left int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = ANY ($1)`,
			[]string{heldHolderApp, heldMonitorApp}).Scan(&left); err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%d of the scenario's sessions still open", left)
		}
		return nil
	})
}

// Without -db, or with a schema that is not the broker's, heldxmin refuses to start.
func TestHeldXminNeedsTheBrokersDatabaseAndSchema(t *testing.T) {
	_, err := Run(context.Background(), "heldxmin", Config{Server: "http://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "-db") {
		t.Fatalf("no -db: err %v", err)
	}
	_, err = Run(context.Background(), "heldxmin", Config{Server: "http://127.0.0.1:1", DSN: testDSN, Schema: "no_such_schema"})
	if err == nil || !strings.Contains(err.Error(), "-schema") {
		t.Fatalf("a wrong schema: err %v", err)
	}
}
