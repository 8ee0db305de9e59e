package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/pgtest"
)

// A session holding a REPEATABLE READ snapshot is the database's oldest horizon: XminHorizon
// reports a holder with an age of at least the time it has been held. (Other packages' tests
// may hold older ones on the shared database, so the holder is checked field by field only when
// it is this test's session.)
func TestXminHorizonReportsAHeldSnapshot(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "xmin_horizon")
	cfg, err := pgx.ParseConfig(testDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "xmin-horizon-test"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pid, tx := pgtest.HoldSnapshot(t, conn, "")
	time.Sleep(1100 * time.Millisecond) // real elapsed time, not an ordering

	h, err := s.XminHorizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Holder == nil || h.AgeSeconds() < 1 {
		t.Fatalf("held for 1.1 s, the horizon reads %+v", h.Holder)
	}
	if !h.Past(time.Second) || h.Past(time.Hour) {
		t.Errorf("age %.2f s: Past(1 s) %v, Past(1 h) %v", h.AgeSeconds(), h.Past(time.Second), h.Past(time.Hour))
	}
	if o := h.Holder; o.PID == pid {
		if o.ApplicationName != "xmin-horizon-test" || o.State != "idle in transaction" || o.BackendType != "client backend" ||
			o.XidAge < 0 || o.XactStart.IsZero() {
			t.Errorf("holder %+v", o)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err = s.XminHorizon(ctx); err != nil {
		t.Fatal(err)
	}
	if h.Holder != nil && h.Holder.PID == pid {
		t.Errorf("the session ended its transaction and still holds the horizon: %+v", h.Holder)
	}
}

// A reader without pg_read_all_stats sees another role's holder by pid, application name and
// xmin only: XminHorizon still reports it, Hidden, with no age in seconds. (The reader is this
// package's superuser under SET ROLE, through the role GUC of its connections.)
func TestXminHorizonReportsAnotherRolesHolderHidden(t *testing.T) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := "queen_xmin_reader_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if _, err := admin.Exec(ctx, "CREATE ROLE "+quoteIdent(role)+" NOLOGIN"); err != nil {
		t.Skipf("cannot create a role to read as: %v", err)
	}
	defer func() { _, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+quoteIdent(role)) }()
	reader, err := Open(ctx, Options{DSN: withParam(testDSN, "role="+role), Schema: "xmin_hidden", MaxConns: 1,
		ConnectTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	pid, _ := pgtest.HoldSnapshot(t, admin, "")
	h, err := reader.XminHorizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Holder == nil {
		t.Fatal("another role's held snapshot is not reported")
	}
	if o := h.Holder; o.PID == pid {
		if !o.Hidden || o.State != "" || !o.XactStart.IsZero() || o.AgeSeconds != 0 || h.AgeKnown() || h.Past(0) {
			t.Errorf("holder %+v: want hidden, without state or age", o)
		}
	} else if !o.Hidden {
		t.Errorf("the holder is pid %d (%+v), not this test's %d, yet visible to the reader", o.PID, o, pid)
	}
}
