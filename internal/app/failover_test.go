package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/pgcluster"
)

// A broker whose DATABASE_URL names a primary and its standby (target_session_attrs=read-write)
// follows a promotion without a restart. Under load of producers and two consumer groups,
// replication is stalled (the primary's walsender stopped), then the primary crashes (pg_ctl
// stop -m immediate) and the standby is promoted. Pushes meanwhile are spooled and replay into
// the promoted standby, which keeps the system identifier the spool's owner records; a third
// consumer group, started only after the promotion, reads what the promoted database holds.
//
// The fault is the same in both subtests; only the replication mode differs:
//
//   - synchronous: the stalled standby cannot confirm, so the primary acknowledges no commit
//     made during the stall; then no acknowledged push is lost (in any group, the late one
//     included), no message is delivered after its ack was answered as committed, every
//     partition is delivered in push order in each group, and the pool, the LISTEN connection
//     and the leader jobs all work on the new primary.
//   - asynchronous, the control: pushes acknowledged during the stall exist on the primary
//     alone, so the same checks must find lost acknowledged pushes. A checker that found none
//     here could not find a loss in the synchronous case either.
//
// The time from the promotion to a push written (not spooled) and popped again is logged; the
// target is 5 s (the outage probe runs every 500 ms), and the test fails only past 30 s, a
// bound no healthy run comes near, so that a loaded CI machine does not make it flaky.
func TestFailoverToSynchronousStandbyLosesNothing(t *testing.T) {
	t.Run("synchronous", func(t *testing.T) {
		runFailover(t, true).check(t)
	})
	t.Run("asynchronous control", func(t *testing.T) {
		found := runFailover(t, false).findings()
		if len(found.lost) == 0 {
			t.Errorf("no lost acknowledged push found after the promotion of an asynchronous standby "+
				"whose replication stalled: the checker cannot see a loss (%s)", found.summary)
		}
		t.Logf("the checker found, as it must: %d acknowledged pushes lost (e.g. %v), %d deliveries after a committed ack; %s",
			len(found.lost), found.lost[:min(len(found.lost), 3)], len(found.afterAck), found.summary)
	})
}

// runFailover runs the failover under load (see TestFailoverToSynchronousStandbyLosesNothing)
// with a synchronous or an asynchronous standby, and returns once every producer's last
// acknowledged push was delivered to every group and the load has stopped, for the
// subtest to check what the load recorded.
func runFailover(t *testing.T, synchronous bool) *failoverLoad {
	ctx := t.Context()
	primary := pgcluster.MustPrimary(t, pgcluster.Options{})
	standby := pgcluster.MustStandby(t, primary, pgcluster.StandbyOptions{Name: "queen_standby"})
	if synchronous {
		if err := primary.SetSynchronous(ctx, standby); err != nil {
			t.Fatal(err)
		}
	}
	if err := primary.CreateDatabase(ctx, "queen"); err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("postgres://postgres@%s,%s/queen?sslmode=disable&target_session_attrs=read-write",
		primary.Addr(), standby.Addr())
	cfg := productionConfig(t, dsn, "queen_go")
	cfg.PprofAddr = ""
	cfg.FileBufferFlushInterval = 50 * time.Millisecond
	// Pushes whose commit waits for a stalled synchronous standby give up (and are spooled)
	// after this, instead of the default 10 s.
	cfg.DBRequestTimeout = 2 * time.Second
	log, logger := newLockedLog(t)
	a := startApp(t, cfg, app.WithLogger(logger))
	base := a.URL()
	const queue = "failover"
	if r := call(base, "POST", "/api/v1/configure", map[string]any{"queue": queue,
		"options": map[string]any{"leaseTime": 5}}); r.code != 200 {
		t.Fatalf("configure: %d %s", r.code, r.body)
	}

	load := newFailoverLoad(base, queue, 4, "g1", "g2", "late")
	load.startProducers()
	load.startConsumers(2, "g1", "g2")
	defer func() { // a failed test still ends its goroutines before the broker stops
		closeOnce(load.stopProducers)
		closeOnce(load.stopConsumers)
		load.producersWG.Wait()
		load.consumersWG.Wait()
	}()
	load.waitFor(t, "200 acknowledged pushes and 100 committed acks", time.Minute, func() bool {
		return len(load.acked) >= 200 && len(load.committed) >= 100
	})

	// Stall replication: from here on the primary's WAL reaches the standby no more. Wait until
	// every producer has had two pushes sent after the stall answered: acknowledged at once by
	// the asynchronous primary (on it alone), or, with the synchronous standby, each waiting
	// for the standby until DB_REQUEST_TIMEOUT.
	if err := primary.StallReplication(ctx, standby); err != nil {
		t.Fatal(err)
	}
	load.stall()
	load.waitFor(t, "two pushes per producer answered after the stall", time.Minute, func() bool {
		return load.answeredAfterStallAtLeast(2)
	})
	var ahead bool
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() > $1::pg_lsn", standbyReceived(t, standby)).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	if !ahead {
		t.Fatal("the stalled standby received all of the primary's WAL: the stall did not hold")
	}

	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	crashedAt := time.Now()
	// Pushes spooled before the broker saw the outage (a synchronous commit past its deadline)
	// do not count: the promotion comes once the outage began and pushes spool for it.
	load.waitFor(t, "the broker to see the outage", time.Minute, func() bool {
		return a.Store().DatabaseDetail().UnavailableSince != nil
	})
	_, bufferedBefore, _ := load.figures()
	load.waitFor(t, "pushes spooled while no primary is there", time.Minute, func() bool {
		n := 0
		for _, st := range load.acked {
			if st == "buffered" {
				n++
			}
		}
		return n >= bufferedBefore+8
	})
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	load.startConsumers(2, "late")
	served := servedAgain(t, base, promotedAt)
	t.Logf("primary down %v before the promotion; push written and popped again %v after it (target 5 s)",
		promotedAt.Sub(crashedAt).Round(time.Millisecond), served.Round(time.Millisecond))
	if served > 30*time.Second {
		t.Errorf("push and pop served again only %v after the promotion", served)
	}
	// While the producers push, the listener gets notifications and never goes quiet long
	// enough (DB_REQUEST_TIMEOUT) to ping, so its backend still shows its LISTEN.
	checkOnNewPrimary(t, a, standby)

	acked, _, _ := load.figures()
	load.waitFor(t, "100 pushes acknowledged after the promotion", time.Minute, func() bool {
		return len(load.acked) >= acked+100
	})
	close(load.stopProducers)
	load.producersWG.Wait()
	waitDrained(t, base)
	load.waitFor(t, "every producer's last acknowledged push delivered to every group", 2*time.Minute, load.lastDelivered)
	close(load.stopConsumers)
	load.consumersWG.Wait()
	t.Logf("answers: %s", load.answerCounts())

	acked, buffered, committed := load.figures()
	if buffered == 0 {
		t.Error("no push was spooled while no primary was there")
	}
	t.Logf("%d pushes acknowledged (%d spooled), %d acks committed", acked, buffered, committed)
	if d := a.Drainer().Stats(); d.Pending != 0 || d.Failed != 0 {
		t.Errorf("spool after the failover: %+v", d)
	}
	if text := log.String(); !strings.Contains(text, "database available again") {
		t.Error("the outage's end was not logged")
	}
	return load
}

// standbyReceived returns the last WAL position the standby received (pg_lsn as text).
func standbyReceived(t *testing.T, standby *pgcluster.Cluster) string {
	t.Helper()
	var lsn string
	if err := standby.QueryRow(t.Context(), "SELECT pg_last_wal_receive_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// servedAgain returns how long after since a push to a queue of its own is written (201
// queued, not spooled) and a pop of that queue returns it.
func servedAgain(t *testing.T, base string, since time.Time) time.Duration {
	t.Helper()
	const queue = "failover-probe"
	for i := 0; ; i++ {
		if time.Since(since) > 2*time.Minute {
			t.Fatal("push and pop not served two minutes after the promotion")
		}
		r := call(base, "POST", "/api/v1/push", itemsBody(queue, "Default", fmt.Sprintf("probe-%d-%s", i, uuid.NewString())))
		if r.code != 201 || !strings.Contains(r.body, `"status":"queued"`) {
			backoff()
			continue
		}
		if code, keys := popKeys(t, base, queue, "Default", 100); code == 200 && len(keys) > 0 {
			return time.Since(since)
		}
	}
}

// checkOnNewPrimary requires the broker's session-bound parts to have moved to the promoted
// standby: its LISTEN connection (a backend listening there) and a leader job (its advisory
// lock taken and its work done there).
func checkOnNewPrimary(t *testing.T, a *app.App, promoted *pgcluster.Cluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var listening int
		err := promoted.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = 'queen' AND query LIKE 'LISTEN %'`).Scan(&listening)
		if err != nil {
			t.Fatal(err)
		}
		if listening == 1 && a.Store().DatabaseDetail().Listener == mq.ListenerConnected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker's listener is not on the promoted standby (%d listening backends there, listener %s)",
				listening, a.Store().DatabaseDetail().Listener)
		}
		backoff()
	}
	// The broker's own loop may be running the job this moment (it retries what failed while
	// the primary was away), holding the job's lock: ran is false then, with nothing wrong, and
	// the next try gets it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		ran, err := a.Jobs().RunOnce(ctx, mq.JobLeaseHousekeeping)
		if err != nil {
			t.Fatalf("lease housekeeping on the promoted standby: %v", err)
		}
		if ran {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("lease housekeeping on the promoted standby: its lock stayed held for 30 s")
		}
		backoff()
	}
}

// closeOnce closes ch unless it is closed already.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
