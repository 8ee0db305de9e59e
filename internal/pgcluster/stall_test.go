package pgcluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStallReplicationKeepsCommitsOffTheStandby checks the fault StallReplication injects:
// a commit made on the primary after the stall is acknowledged by an asynchronous primary and
// waits for a synchronous standby's confirmation that never comes, and in both cases the
// standby promoted after the crash lacks it, while it has every row committed before.
func TestStallReplicationKeepsCommitsOffTheStandby(t *testing.T) {
	for _, synchronous := range []bool{false, true} {
		name := map[bool]string{false: "asynchronous", true: "synchronous"}[synchronous]
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			primary := MustPrimary(t, Options{})
			standby := MustStandby(t, primary, StandbyOptions{Name: "s1"})
			if synchronous {
				if err := primary.SetSynchronous(ctx, standby); err != nil {
					t.Fatal(err)
				}
			}
			if err := primary.CreateDatabase(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			if err := primary.Exec(ctx, "app", "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if err := poll(ctx, readyTimeout, func(ctx context.Context) error {
				return standby.Exec(ctx, "app", "SELECT 1/count(*) FROM t")
			}); err != nil {
				t.Fatal(err)
			}

			if err := primary.StallReplication(ctx, standby); err != nil {
				t.Fatal(err)
			}
			// With the synchronous standby the commit waits until the client's deadline cancels
			// the wait (pgx sends a cancel request): PostgreSQL then warns that the row is
			// committed locally, and the client has no success either way.
			ictx, cancel := context.WithTimeout(ctx, time.Second)
			err := primary.Exec(ictx, "app", "INSERT INTO t VALUES (2)")
			cancel()
			if !synchronous && err != nil {
				t.Fatalf("an asynchronous primary did not commit while replication stalled: %v", err)
			}
			if synchronous && err == nil {
				t.Fatal("a commit was acknowledged while the synchronous standby was stalled")
			}
			crashStart := time.Now()
			if err := primary.Crash(); err != nil {
				t.Fatal(err)
			}
			t.Logf("crash with a stalled walsender took %v", time.Since(crashStart).Round(time.Millisecond))
			if err := standby.Promote(ctx); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, standby.DSN("app"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var ids []int32
			if err := conn.QueryRow(ctx, "SELECT array_agg(id ORDER BY id) FROM t").Scan(&ids); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 || ids[0] != 1 {
				t.Errorf("rows on the promoted standby: %v, want [1] (the row committed during the stall never left the primary)", ids)
			}
		})
	}
}
