package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The heldxmin scenario (issue "Steady under a pinned horizon"): one queue, single-message
// producers and single-message pop + ack consumers at once, measured in consecutive windows;
// from window HoldFrom on, another session of the broker's database holds a REPEATABLE READ
// snapshot open, so VACUUM and HOT pruning keep every row version that died since. Each window
// reports pop + ack and push rates; the end reports the live and dead row versions of the
// broker's hot tables.

// Defaults of the heldxmin knobs left zero in Config.
const (
	heldDefaultWindows    = 10
	heldDefaultWindow     = 15 * time.Second
	heldDefaultProducers  = 20
	heldDefaultConsumers  = 50
	heldDefaultPartitions = 200
	heldDefaultSchema     = "queen_go"
	// heldHolderApp and heldMonitorApp are the application_name of the scenario's two
	// database sessions, so pg_stat_activity says what they are.
	heldHolderApp  = "queen-bench heldxmin holder"
	heldMonitorApp = "queen-bench heldxmin monitor"
)

// heldTables are the broker's hot tables whose row versions the scenario reports.
var heldTables = []string{"partitions", "partition_heads", "consumers", "partition_work", "messages"}

// HeldWindow is one measured window of the heldxmin scenario.
type HeldWindow struct {
	Window  int           `json:"window"` // 1-based
	Held    bool          `json:"held"`   // the pinned snapshot was open during the window
	Elapsed time.Duration `json:"elapsedNs"`
	// Popped counts messages popped and acknowledged; a cycle's latency runs from its pop's
	// start to its ack's answer (pops that found nothing are not counted).
	Popped       int64         `json:"popped"`
	PopAckPerSec float64       `json:"popAckMsgsPerSec"`
	PopAckP50    time.Duration `json:"popAckP50Ns"`
	PopAckP99    time.Duration `json:"popAckP99Ns"`
	// Pushed counts messages the database took; pushes the broker spooled instead are
	// PushBuffered, left out (as in the push scenario).
	Pushed       int64         `json:"pushed"`
	PushBuffered int64         `json:"pushBuffered,omitempty"`
	PushPerSec   float64       `json:"pushMsgsPerSec"`
	PushP50      time.Duration `json:"pushP50Ns"`
	PushP99      time.Duration `json:"pushP99Ns"`
	Errors       int64         `json:"errors"`
	// SnapshotAge is how old the held snapshot was at the window's end, XminAge how many
	// transaction ids the server had assigned since (age(backend_xmin)); zero when not held.
	SnapshotAge time.Duration `json:"snapshotAgeNs,omitempty"`
	XminAge     int64         `json:"xminAgeXids,omitempty"`
	// CPU is per message pushed or popped in the window.
	CPU *CPUCost `json:"cpu,omitempty"`
}

// TableRows is the row versions of one of the broker's tables at the end of a heldxmin run,
// read while the snapshot is still held: Live and Dead from pg_stat_user_tables (n_live_tup,
// n_dead_tup: the statistics system's running estimates), ScannedLive and ScannedDead from
// pgstattuple (tuple_count, dead_tuple_count: a scan of the table) when that extension is
// installed in the database.
type TableRows struct {
	Table       string `json:"table"`
	Live        int64  `json:"live"`
	Dead        int64  `json:"dead"`
	ScannedLive *int64 `json:"scannedLive,omitempty"`
	ScannedDead *int64 `json:"scannedDead,omitempty"`
}

// heldConfig is Config's heldxmin knobs with their defaults applied.
type heldConfig struct {
	windows, producers, consumers, partitions, holdFrom int
	window                                              time.Duration
	schema                                              string
}

func (c Config) held() (heldConfig, error) {
	h := heldConfig{windows: c.Windows, window: c.Window, producers: c.Producers, consumers: c.Consumers,
		partitions: c.Partitions, holdFrom: c.HoldFrom, schema: c.Schema}
	for _, d := range []struct {
		v   *int
		def int
	}{{&h.windows, heldDefaultWindows}, {&h.producers, heldDefaultProducers}, {&h.consumers, heldDefaultConsumers},
		{&h.partitions, heldDefaultPartitions}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if h.window == 0 {
		h.window = heldDefaultWindow
	}
	if h.schema == "" {
		h.schema = heldDefaultSchema
	}
	switch {
	case c.DSN == "":
		return h, errors.New("heldxmin needs -db, the broker's database: a second session holds its snapshot there and its tables are counted")
	case h.windows < 1 || h.producers < 1 || h.consumers < 1 || h.partitions < 1 || h.window <= 0:
		return h, fmt.Errorf("heldxmin: windows %d, window %s, producers %d, consumers %d, partitions %d: each must be more than 0",
			h.windows, h.window, h.producers, h.consumers, h.partitions)
	case h.holdFrom < 0:
		return h, fmt.Errorf("heldxmin: hold from window %d: must be 0 (never) or more", h.holdFrom)
	}
	return h, nil
}

// heldWindowRecs is one window's recordings.
type heldWindowRecs struct{ pop, push recorder }

// heldXmin runs the heldxmin scenario. Its Result's totals are the pop + ack cycles of all
// windows; Windows and Tables carry the rest.
func (r *runner) heldXmin(ctx context.Context) (Result, error) {
	h, err := r.cfg.held()
	if err != nil {
		return Result{}, err
	}
	mon, err := connectAs(ctx, r.cfg.DSN, heldMonitorApp)
	if err != nil {
		return Result{}, fmt.Errorf("heldxmin: connect to -db: %w", err)
	}
	defer mon.Close(context.Background())
	if err := checkHeldTables(ctx, mon, h.schema); err != nil {
		return Result{}, err
	}

	// Every partition exists and holds a small backlog before the first window: consumers do
	// not idle at the start, and no partition is created while measuring.
	backlog := max(r.cfg.Messages, h.partitions, h.consumers*20)
	if err := r.prefill(ctx, r.queue, backlog, h.partitions); err != nil {
		return Result{}, fmt.Errorf("prefill: %w", err)
	}
	// Push bodies are built once, one per partition, and sent round robin.
	bodies := make([][]byte, h.partitions)
	for p := range bodies {
		bodies[p] = r.pushBody(r.queue, 1, func(int) int { return p }, 0)
	}

	// The holder is rolled back on every way out (release is idempotent), after the workers
	// stop and before the monitor closes: deferred calls run last first.
	var hold *holder
	defer func() { hold.release() }()

	// The warm-up's answers and those after the last window are discarded.
	win := newWindowRecs[heldWindowRecs](h.windows)
	// Workers stop starting requests once the last window ends and let those in flight
	// finish; on an early return those are cancelled.
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stopWorkers := func() {
		win.stop()
		wg.Wait()
	}
	defer func() { cancel(); stopWorkers() }()
	var seq atomic.Int64
	for range h.producers {
		wg.Go(func() {
			for win.running(wctx) {
				body := bodies[int(seq.Add(1))%len(bodies)]
				r.pushRecorded(wctx, body, 1, func() *recorder { return &win.current().push })
			}
		})
	}
	for range h.consumers {
		wg.Go(func() {
			for win.running(wctx) {
				if err := r.popAckOne(wctx, win.current); err != nil && wctx.Err() == nil {
					win.current().pop.fail()
				}
			}
		})
	}

	// A short warm-up, unmeasured: the broker's fresh database sessions compile their
	// functions on first use, which window 1 (the control) should not measure.
	if err := sleepCtx(ctx, min(time.Second, h.window)); err != nil {
		return Result{}, err
	}
	out := make([]HeldWindow, h.windows)
	bounds := make([]time.Time, h.windows+1)
	cpus := make([]cpuSnapshot, h.windows+1)
	for w := range h.windows {
		if w+1 == h.holdFrom {
			if hold, err = openHolder(ctx, r.cfg.DSN, h.schema); err != nil {
				return Result{}, fmt.Errorf("hold the snapshot: %w", err)
			}
		}
		if w == 0 {
			cpus[0] = takeCPU(r.cfg.PID)
			bounds[0] = time.Now()
			win.start(0)
		}
		out[w].Window, out[w].Held = w+1, hold != nil
		if err := sleepCtx(ctx, time.Until(bounds[w].Add(h.window))); err != nil {
			return Result{}, err
		}
		bounds[w+1] = time.Now()
		win.start(w + 1)
		cpus[w+1] = takeCPU(r.cfg.PID)
		if hold != nil {
			if out[w].XminAge, err = hold.xminAge(ctx, mon); err != nil {
				return Result{}, err
			}
			out[w].SnapshotAge = bounds[w+1].Sub(hold.since)
		}
		r.heldWindowDone(&out[w], &win.recs[w], bounds[w+1].Sub(bounds[w]), cpus[w], cpus[w+1])
	}
	stopWorkers()

	tables, source, err := heldTableRows(ctx, mon, h.schema)
	if err != nil {
		return Result{}, err
	}
	hold.release()

	all := windowTotals(win, func(rw *heldWindowRecs) (*recorder, *recorder) { return &rw.pop, &rw.push })
	res := all.result("heldxmin", fmt.Sprintf("producers=%d consumers=%d partitions=%d windows=%dx%s holdFrom=%d payload=%dB (messages = popped and acked)",
		h.producers, h.consumers, h.partitions, h.windows, h.window, h.holdFrom, r.cfg.PayloadBytes), bounds[h.windows].Sub(bounds[0]))
	res.CPU = cpus[h.windows].costSince(cpus[0], float64(all.msgs))
	res.Windows, res.Tables, res.TablesSource = out, tables, source
	return res, nil
}

// heldWindowDone fills a window's figures from its recordings and prints them as progress.
func (r *runner) heldWindowDone(w *HeldWindow, rw *heldWindowRecs, elapsed time.Duration, cpu0, cpu1 cpuSnapshot) {
	pop, push := rw.pop.result("", "", elapsed), rw.push.result("", "", elapsed)
	w.Elapsed = elapsed
	w.Popped, w.PopAckPerSec, w.PopAckP50, w.PopAckP99 = pop.Messages, pop.MsgsPerSec, pop.P50, pop.P99
	w.Pushed, w.PushBuffered, w.PushPerSec, w.PushP50, w.PushP99 = push.Messages, push.Buffered, push.MsgsPerSec, push.P50, push.P99
	w.Errors = pop.Errors + push.Errors
	w.CPU = cpu1.costSince(cpu0, float64(pop.Messages+push.Messages))
	if r.cfg.Progress != nil {
		held := "no"
		if w.Held {
			held = "yes, " + w.SnapshotAge.Round(time.Second).String()
		}
		fmt.Fprintf(r.cfg.Progress, "heldxmin window %d (held %s): %.0f pop+ack msgs/s, %.0f push msgs/s\n",
			w.Window, held, w.PopAckPerSec, w.PushPerSec)
	}
}

// popAckOne pops one message (long-polling, as popack does) and acknowledges it alone, and
// records the cycle in the window current at the ack's answer.
func (r *runner) popAckOne(ctx context.Context, window func() *heldWindowRecs) error {
	t := time.Now()
	var p popAnswer
	code, err := r.api.call(ctx, http.MethodGet, "/api/v1/pop/queue/"+r.queue+"?batch=1&wait=true&timeout=200", nil, &p)
	if err != nil || code == http.StatusNoContent || len(p.Messages) == 0 {
		return err
	}
	for _, m := range p.Messages {
		body, _ := json.Marshal(map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": p.LeaseID, "consumerGroup": ""})
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/ack", body, nil); err != nil {
			return err
		}
	}
	window().pop.ok(time.Since(t), len(p.Messages))
	return nil
}

// holder is the session pinning the snapshot horizon: a REPEATABLE READ transaction whose
// first SELECT took its snapshot, left open.
type holder struct {
	conn  *pgx.Conn
	tx    pgx.Tx
	pid   uint32
	since time.Time
	once  sync.Once
}

func openHolder(ctx context.Context, dsn, schema string) (*holder, error) {
	conn, err := connectAs(ctx, dsn, heldHolderApp)
	if err != nil {
		return nil, err
	}
	h := &holder{conn: conn, pid: conn.PgConn().PID()}
	if h.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}); err == nil {
		h.since = time.Now()
		var n int64
		err = h.tx.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "partitions"}.Sanitize()).Scan(&n)
	}
	if err != nil {
		h.release()
		return nil, err
	}
	return h, nil
}

// release rolls the transaction back and ends the session; on nil or a second call, nothing.
func (h *holder) release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if h.tx != nil {
			_ = h.tx.Rollback(ctx)
		}
		_ = h.conn.Close(ctx)
	})
}

// xminAge is how many transaction ids old the holder's snapshot is, read by mon; an error
// when the holder no longer holds one (its session ended: idle_in_transaction_session_timeout?).
func (h *holder) xminAge(ctx context.Context, mon *pgx.Conn) (int64, error) {
	var age *int64
	err := mon.QueryRow(ctx, "SELECT age(backend_xmin)::bigint FROM pg_stat_activity WHERE pid = $1", int64(h.pid)).Scan(&age)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && age == nil {
		return 0, fmt.Errorf("the holder session (pid %d) no longer holds its snapshot (idle_in_transaction_session_timeout?)", h.pid)
	}
	if err != nil {
		return 0, err
	}
	return *age, nil
}

func connectAs(ctx context.Context, dsn, app string) (*pgx.Conn, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pc.RuntimeParams["application_name"] = app
	return pgx.ConnectConfig(ctx, pc)
}

// checkHeldTables fails unless the schema holds every table the scenario counts.
func checkHeldTables(ctx context.Context, mon *pgx.Conn, schema string) error {
	var missing []string
	err := mon.QueryRow(ctx, `SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM unnest($2::text[]) t
		WHERE to_regclass(quote_ident($1) || '.' || quote_ident(t)) IS NULL`, schema, heldTables).Scan(&missing)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("heldxmin: schema %q of -db has no table %v: is -schema the broker's DB_SCHEMA?", schema, missing)
	}
	return nil
}

// heldStatsSettle is how long heldTableRows waits, after the load stops, for the broker's
// sessions to report their table statistics. A PostgreSQL 15 backend reports them when it
// goes idle, at most once a second (PGSTAT_MIN_INTERVAL); pg_stat_force_next_flush() only
// flushes the calling session's own, so it cannot hurry the broker's.
const heldStatsSettle = 1500 * time.Millisecond

// heldLeaves lists the tables that hold the rows of table u.t in schema $1: the table itself,
// or the partitions of a partitioned one (messages: its segments, migration 0023), whose
// parent has no statistics and no tuples of its own.
const heldLeaves = `SELECT c.oid FROM pg_class c
	WHERE c.oid = to_regclass(quote_ident($1) || '.' || quote_ident(u.t)) AND c.relkind = 'r'
	UNION ALL
	SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = to_regclass(quote_ident($1) || '.' || quote_ident(u.t))`

// heldTableRows reads the row versions of the hot tables once the statistics have settled
// (two reads half a second apart agree; five seconds at most), and scans the tables with
// pgstattuple when it is installed. The source says which.
func heldTableRows(ctx context.Context, mon *pgx.Conn, schema string) ([]TableRows, string, error) {
	if err := sleepCtx(ctx, heldStatsSettle); err != nil {
		return nil, "", err
	}
	read := func() ([]TableRows, error) {
		if _, err := mon.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return nil, err
		}
		rows, err := mon.Query(ctx, `SELECT u.t, coalesce(sum(s.n_live_tup), 0)::bigint, coalesce(sum(s.n_dead_tup), 0)::bigint
			FROM unnest($2::text[]) WITH ORDINALITY u(t, i)
			LEFT JOIN LATERAL (`+heldLeaves+`) l ON true
			LEFT JOIN pg_stat_user_tables s ON s.relid = l.oid
			GROUP BY u.t, u.i ORDER BY u.i`, schema, heldTables)
		if err != nil {
			return nil, err
		}
		return collectTableRows(rows)
	}
	tables, err := read()
	for deadline := time.Now().Add(5*time.Second - heldStatsSettle); err == nil && time.Now().Before(deadline); {
		if err = sleepCtx(ctx, 500*time.Millisecond); err != nil {
			break
		}
		var again []TableRows
		if again, err = read(); err == nil {
			same := slices.Equal(again, tables)
			tables = again
			if same {
				break
			}
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	source := "pg_stat_user_tables"
	var ext string
	if err := mon.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pgstattuple'`).Scan(&ext); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return tables, source, nil
		}
		return nil, "", err
	}
	q := `SELECT coalesce(sum(p.tuple_count), 0)::bigint, coalesce(sum(p.dead_tuple_count), 0)::bigint
		FROM (SELECT $2::text AS t) u, LATERAL (` + heldLeaves + `) l,
		LATERAL ` + pgx.Identifier{ext, "pgstattuple"}.Sanitize() + `(l.oid::regclass) p`
	for i := range tables {
		var live, dead int64
		if err := mon.QueryRow(ctx, q, schema, tables[i].Table).Scan(&live, &dead); err != nil {
			return nil, "", fmt.Errorf("pgstattuple(%s): %w", tables[i].Table, err)
		}
		tables[i].ScannedLive, tables[i].ScannedDead = &live, &dead
	}
	return tables, source + " + pgstattuple", nil
}

// sleepCtx waits d (nothing when d <= 0) unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
