package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The steady scenario asks whether a broker under a steady load with retention on reaches a
// steady state: producers push at a fixed total rate into one queue whose retention is on,
// consumer groups pop and acknowledge, for a long run in windows; each window reports the
// latencies, the consumers' backlog and, read from the database, the size of what retention
// must keep small (the messages table's rows and oldest row, the database, the dead row
// versions of the hot tables).

// Defaults of the steady knobs left zero in Config.
const (
	steadyDefaultRate       = 2000
	steadyDefaultDuration   = 20 * time.Minute
	steadyDefaultWindow     = time.Minute
	steadyDefaultProducers  = 10
	steadyDefaultConsumers  = 20
	steadyDefaultGroups     = 1
	steadyDefaultPartitions = 5000
	steadyDefaultBatch      = 10
	steadyDefaultRetention  = 120
	steadyMonitorApp        = "queen-bench steady monitor"
)

// steadyTables are the hot tables whose row versions each window reports; a table the schema
// lacks is left out. A partitioned table counts with its partitions.
var steadyTables = []string{"messages", "consumers", "partition_heads", "partition_work", "dedup_tombstones"}

// SteadyWindow is one window of the steady scenario. Latencies are per request; Pushed counts
// messages the broker took (spooled ones included: they are written later), Acked the
// acknowledgements of every group.
type SteadyWindow struct {
	Window     int           `json:"window"` // 1-based
	Elapsed    time.Duration `json:"elapsedNs"`
	Pushed     int64         `json:"pushed"`
	PushPerSec float64       `json:"pushMsgsPerSec"`
	PushP50    time.Duration `json:"pushP50Ns"`
	PushP99    time.Duration `json:"pushP99Ns"`
	Acked      int64         `json:"acked"`
	AckPerSec  float64       `json:"ackMsgsPerSec"`
	AckP50     time.Duration `json:"ackP50Ns"`
	AckP99     time.Duration `json:"ackP99Ns"`
	Errors     int64         `json:"errors"`
	Buffered   int64         `json:"pushBuffered,omitempty"`
	// Backlog is, at the window's end, every message pushed since the start times the groups,
	// minus every acknowledgement: what the consumers have yet to finish.
	Backlog int64 `json:"backlog"`
	// MessageRows and OldestAge are the messages table's rows and the age of its oldest row
	// (by created_at) at the window's end; DatabaseBytes is pg_database_size.
	MessageRows   int64         `json:"messageRows"`
	OldestAge     time.Duration `json:"oldestAgeNs"`
	DatabaseBytes int64         `json:"databaseBytes"`
	// Tables is the live and dead row versions (n_live_tup, n_dead_tup) of the hot tables.
	Tables []TableRows `json:"tables"`
}

// steadyConfig is Config's steady knobs with their defaults applied.
type steadyConfig struct {
	rate, producers, consumers, groups, partitions, batch, retention, windows int
	dedupWindow                                                               int // 0: the queue's default
	duration, window                                                          time.Duration
	schema                                                                    string
}

func (c Config) steady() (steadyConfig, error) {
	s := steadyConfig{rate: cmp0(c.Rate, steadyDefaultRate), producers: cmp0(c.Producers, steadyDefaultProducers),
		consumers: cmp0(c.Consumers, steadyDefaultConsumers), groups: cmp0(c.Groups, steadyDefaultGroups),
		partitions: cmp0(c.Partitions, steadyDefaultPartitions), batch: cmp0(c.Batch, steadyDefaultBatch),
		retention: cmp0(c.RetentionSeconds, steadyDefaultRetention), dedupWindow: c.DedupWindowSeconds,
		duration: c.Duration, window: c.Window, schema: c.Schema}
	if s.duration == 0 {
		s.duration = steadyDefaultDuration
	}
	if s.window == 0 {
		s.window = steadyDefaultWindow
	}
	if s.schema == "" {
		s.schema = heldDefaultSchema
	}
	switch {
	case c.DSN == "":
		return s, errors.New("steady needs -db, the broker's database: its tables are read every window")
	case s.rate < 1 || s.producers < 1 || s.consumers < 1 || s.groups < 1 || s.partitions < 1 || s.batch < 1 || s.retention < 1:
		return s, fmt.Errorf("steady: rate %d, producers %d, consumers %d, groups %d, partitions %d, batch %d, retention %d s: each must be more than 0",
			s.rate, s.producers, s.consumers, s.groups, s.partitions, s.batch, s.retention)
	case s.window <= 0 || s.duration < s.window:
		return s, fmt.Errorf("steady: duration %s, window %s: want a window of more than 0 and no longer than the duration", s.duration, s.window)
	}
	s.windows = steadyWindows(s.duration, s.window)
	return s, nil
}

// steadyWindows is how many windows cover d: a last partial window counts as a whole one.
func steadyWindows(d, window time.Duration) int {
	return int((d + window - 1) / window)
}

// steadyPeriod is how often each producer sends a batch so that all of them together offer
// rate messages per second.
func steadyPeriod(rate, producers, batch int) time.Duration {
	return time.Duration(float64(time.Second) * float64(producers*batch) / float64(rate))
}

// steadyBacklog is what the consumers have yet to acknowledge: every message pushed once per
// group, less the acknowledgements of all groups.
func steadyBacklog(pushed, acked int64, groups int) int64 {
	return pushed*int64(groups) - acked
}

// steadyWindowRecs is one window's recordings.
type steadyWindowRecs struct{ push, ack recorder }

// steady runs the steady scenario. Its Result's totals are the acknowledgements of all
// windows; Steady carries the windows.
func (r *runner) steady(ctx context.Context) (Result, error) {
	s, err := r.cfg.steady()
	if err != nil {
		return Result{}, err
	}
	mon, err := connectAs(ctx, r.cfg.DSN, steadyMonitorApp)
	if err != nil {
		return Result{}, fmt.Errorf("steady: connect to -db: %w", err)
	}
	defer mon.Close(context.Background())
	if err := r.configureRetention(ctx, s.retention, s.dedupWindow); err != nil {
		return Result{}, err
	}
	// Every partition exists before the first window (one message each, which the consumers
	// take at once): no partition is created while measuring.
	if err := r.prefill(ctx, r.queue, s.partitions, s.partitions); err != nil {
		return Result{}, fmt.Errorf("create the partitions: %w", err)
	}
	var pushed, acked atomic.Int64
	pushed.Store(int64(s.partitions))

	win := newWindowRecs[steadyWindowRecs](s.windows)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stopWorkers := func() {
		win.stop()
		cancel() // ends the long polls in flight
		wg.Wait()
	}
	defer stopWorkers()

	// Consumers start first: each group's first pop registers it before anything is pushed.
	for g := range s.groups {
		group := fmt.Sprintf("steady-g%d", g)
		for range s.consumers {
			wg.Go(func() {
				for win.running(wctx) {
					n, err := r.steadyConsume(wctx, group, s.batch, win.current)
					if err != nil && wctx.Err() == nil {
						win.current().ack.fail()
						_ = sleepCtx(wctx, 100*time.Millisecond) // no spinning on a refusing broker
					}
					acked.Add(int64(n))
				}
			})
		}
	}
	if err := sleepCtx(ctx, time.Second); err != nil {
		return Result{}, err
	}

	// Producers send on a schedule, not as fast as they can: each sends a batch every period,
	// producer k offset by k/producers of it; one that falls behind sends at once until it has
	// caught up, so the offered rate holds as long as the broker can take it.
	period := steadyPeriod(s.rate, s.producers, s.batch)
	item := fmt.Sprintf(`{"queue":%q,"payload":%s,"partition":"p`, r.queue, r.cfg.payload(0))
	var seq atomic.Int64
	start := time.Now()
	for k := range s.producers {
		wg.Go(func() {
			next := start.Add(period * time.Duration(k) / time.Duration(s.producers))
			for win.running(wctx) {
				if sleepCtx(wctx, time.Until(next)) != nil {
					return
				}
				next = next.Add(period)
				body := sweepPushBody(item, s.batch, int(seq.Add(1)-1)%s.partitions)
				if r.pushRecorded(wctx, body, s.batch, func() *recorder { return &win.current().push }) {
					pushed.Add(int64(s.batch))
				}
			}
		})
	}

	out := make([]SteadyWindow, s.windows)
	win.start(0)
	from := time.Now()
	for w := range s.windows {
		end := start.Add(s.window * time.Duration(w+1))
		if w == s.windows-1 {
			end = start.Add(s.duration)
		}
		if err := sleepCtx(ctx, time.Until(end)); err != nil {
			return Result{}, err
		}
		to := time.Now()
		win.start(w + 1)
		elapsed := to.Sub(from)
		from = to
		out[w] = steadyWindowFigures(w+1, &win.recs[w], elapsed)
		out[w].Backlog = steadyBacklog(pushed.Load(), acked.Load(), s.groups)
		if err := readSteadyDB(ctx, mon, s.schema, &out[w]); err != nil {
			return Result{}, err
		}
		if r.cfg.Progress != nil {
			x := out[w]
			fmt.Fprintf(r.cfg.Progress, "steady window %d/%d: push %.0f/s p99 %.1f ms, ack %.0f/s p99 %.1f ms, backlog %d, %d message rows (oldest %s), %.0f MB\n",
				x.Window, s.windows, x.PushPerSec, ms(x.PushP99), x.AckPerSec, ms(x.AckP99), x.Backlog, x.MessageRows,
				x.OldestAge.Round(time.Second), float64(x.DatabaseBytes)/(1<<20))
		}
	}
	elapsed := time.Since(start)
	stopWorkers()

	all := windowTotals(win, func(rw *steadyWindowRecs) (*recorder, *recorder) { return &rw.ack, &rw.push })
	res := all.result("steady", fmt.Sprintf("rate=%d/s producers=%d batch=%d partitions=%d groups=%d consumers=%d/group retention=%ds dedupWindow=%s windows=%dx%s payload=%dB (messages = acknowledgements, latency = ack requests)",
		s.rate, s.producers, s.batch, s.partitions, s.groups, s.consumers, s.retention, dedupWindowText(s.dedupWindow), s.windows, s.window, r.cfg.PayloadBytes), elapsed)
	res.Steady = out
	return res, nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// dedupWindowText is the dedup window a run configured, as its header says it.
func dedupWindowText(seconds int) string {
	if seconds == 0 {
		return "default"
	}
	return fmt.Sprintf("%ds", seconds)
}

// configureRetention creates the runner's queue with retention on: every message older than
// seconds goes, consumed or not, and so does every consumed one; dedupWindow, when not 0, is
// its dedupWindowSeconds.
func (r *runner) configureRetention(ctx context.Context, seconds, dedupWindow int) error {
	opts := map[string]any{"retentionEnabled": true, "retentionSeconds": seconds, "completedRetentionSeconds": seconds}
	if dedupWindow > 0 {
		opts["dedupWindowSeconds"] = dedupWindow
	}
	body, _ := json.Marshal(map[string]any{"queue": r.queue, "options": opts})
	if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/configure", body, nil); err != nil {
		return fmt.Errorf("configure the queue's retention: %w", err)
	}
	return nil
}

// steadyConsume pops up to batch messages for group (long-polling) and acknowledges them in
// one batch ack, whose latency it records; it returns how many it acknowledged.
func (r *runner) steadyConsume(ctx context.Context, group string, batch int, window func() *steadyWindowRecs) (int, error) {
	var p popAnswer
	q := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&consumerGroup=%s&wait=true&timeout=1000", r.queue, batch, group)
	code, err := r.api.call(ctx, http.MethodGet, q, nil, &p)
	if err != nil || code == http.StatusNoContent || len(p.Messages) == 0 {
		return 0, err
	}
	t := time.Now()
	if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/ack/batch", ackBatchBody(group, &p), nil); err != nil {
		return 0, err
	}
	window().ack.ok(time.Since(t), len(p.Messages))
	return len(p.Messages), nil
}

// steadyWindowFigures is a window's request figures from its recordings.
func steadyWindowFigures(n int, rw *steadyWindowRecs, elapsed time.Duration) SteadyWindow {
	push, ack := rw.push.result("", "", elapsed), rw.ack.result("", "", elapsed)
	return SteadyWindow{Window: n, Elapsed: elapsed,
		Pushed: push.Messages + push.Buffered, PushPerSec: float64(push.Messages+push.Buffered) / elapsed.Seconds(),
		PushP50: push.P50, PushP99: push.P99, Buffered: push.Buffered,
		Acked: ack.Messages, AckPerSec: ack.MsgsPerSec, AckP50: ack.P50, AckP99: ack.P99,
		Errors: push.Errors + ack.Errors}
}

// readSteadyDB reads the database's figures of a window: the messages table's rows and oldest
// row (a scan: once a window is cheap next to the load), the database size, and the row
// versions of the hot tables, a partitioned one summed over its partitions.
func readSteadyDB(ctx context.Context, mon *pgx.Conn, schema string, w *SteadyWindow) error {
	var age float64
	err := mon.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM `+
		pgx.Identifier{schema, "messages"}.Sanitize()).Scan(&w.MessageRows, &age)
	if err != nil {
		return fmt.Errorf("steady: read the messages table (is -schema the broker's DB_SCHEMA?): %w", err)
	}
	w.OldestAge = time.Duration(age * float64(time.Second))
	if err := mon.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&w.DatabaseBytes); err != nil {
		return fmt.Errorf("steady: database size: %w", err)
	}
	rows, err := mon.Query(ctx, `SELECT u.t, coalesce(sum(s.n_live_tup), 0)::bigint, coalesce(sum(s.n_dead_tup), 0)::bigint
		FROM unnest($2::text[]) WITH ORDINALITY u(t, i)
		CROSS JOIN LATERAL (SELECT to_regclass(quote_ident($1) || '.' || quote_ident(u.t)) AS rel) c
		LEFT JOIN pg_stat_user_tables s
		  ON s.relid = c.rel OR s.relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = c.rel)
		WHERE c.rel IS NOT NULL
		GROUP BY u.t, u.i ORDER BY u.i`, schema, steadyTables)
	if err != nil {
		return fmt.Errorf("steady: read pg_stat_user_tables: %w", err)
	}
	w.Tables, err = collectTableRows(rows)
	if err != nil {
		return fmt.Errorf("steady: read pg_stat_user_tables: %w", err)
	}
	return nil
}
