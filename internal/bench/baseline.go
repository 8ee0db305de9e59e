package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Baseline kinds. A measured Baseline's Name is its kind and connection count, e.g.
// "single-row insert+commit, 32 connections".
const (
	BaselineSingle = "single-row insert+commit"
	BaselineBatch  = "100-row INSERT per transaction"
	BaselineCursor = "read 100 rows after a cursor + update the cursor"
)

// baselineConns is the connection count of a baseline kind: Config.BaselineConns when set,
// else 32 for single-row commits (enough to saturate group commit here) and 8 for the batch
// kinds (CPU-bound with a few).
func baselineConns(cfg Config, kind string) int {
	switch {
	case cfg.BaselineConns > 0:
		return cfg.BaselineConns
	case kind == BaselineSingle:
		return 32
	default:
		return 8
	}
}

// baselines measures PostgreSQL's own limits on a plain table in a scratch schema of the
// broker's database, with the same payload as the scenarios.
type baselines struct {
	pool *pgxpool.Pool
	cfg  Config
}

func openBaselines(ctx context.Context, cfg Config) (*baselines, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = int32(max(baselineConns(cfg, BaselineSingle), baselineConns(cfg, BaselineBatch)) + 2)
	pc.ConnConfig.RuntimeParams["search_path"] = "queen_bench"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{
		"DROP SCHEMA IF EXISTS queen_bench CASCADE", "CREATE SCHEMA queen_bench",
		"CREATE TABLE queen_bench.rows (id bigserial PRIMARY KEY, payload json NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
		"CREATE TABLE queen_bench.lanes (lane int, pos bigint, payload json NOT NULL, PRIMARY KEY (lane, pos))",
		"CREATE TABLE queen_bench.cursors (lane int PRIMARY KEY, pos bigint NOT NULL)",
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, fmt.Errorf("baseline setup: %w", err)
		}
	}
	return &baselines{pool: pool, cfg: cfg}, nil
}

func (b *baselines) close() {
	_, _ = b.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS queen_bench CASCADE")
	b.pool.Close()
}

// run measures one baseline kind.
func (b *baselines) run(ctx context.Context, kind string) (*Baseline, error) {
	var m measured
	var err error
	conns := baselineConns(b.cfg, kind)
	switch kind {
	case BaselineSingle:
		m, err = b.loop(ctx, conns, func(ctx context.Context, _ int) (int, error) {
			_, err := b.pool.Exec(ctx, "INSERT INTO rows (payload) VALUES ($1)", b.cfg.payload(0))
			return 1, err
		})
	case BaselineBatch:
		stmt := "INSERT INTO rows (payload) VALUES " + strings.TrimSuffix(strings.Repeat("($1),", 100), ",")
		m, err = b.loop(ctx, conns, func(ctx context.Context, _ int) (int, error) {
			_, err := b.pool.Exec(ctx, stmt, b.cfg.payload(0))
			return 100, err
		})
	case BaselineCursor:
		m, err = b.cursorReads(ctx, conns)
	default:
		return nil, fmt.Errorf("unknown baseline %q", kind)
	}
	if err != nil {
		return nil, err
	}
	return &Baseline{Name: fmt.Sprintf("%s, %d connections", kind, conns), Kind: kind, Conns: conns,
		RowsPerSec: m.rowsPerSec, CPU: m.cpu}, nil
}

// cursorReads prefills one lane per connection and measures reading 100 rows after the lane's
// cursor and moving the cursor, one transaction each.
func (b *baselines) cursorReads(ctx context.Context, lanes int) (measured, error) {
	perLane := 30000
	if _, err := b.pool.Exec(ctx, `INSERT INTO lanes (lane, pos, payload)
		SELECT l, p, $1::json FROM generate_series(0, $2 - 1) l, generate_series(1, $3) p`, b.cfg.payload(0), lanes, perLane); err != nil {
		return measured{}, err
	}
	if _, err := b.pool.Exec(ctx, "INSERT INTO cursors SELECT l, 0 FROM generate_series(0, $1 - 1) l", lanes); err != nil {
		return measured{}, err
	}
	if _, err := b.pool.Exec(ctx, "VACUUM ANALYZE lanes"); err != nil {
		return measured{}, err
	}
	return b.loop(ctx, lanes, func(ctx context.Context, lane int) (int, error) {
		tx, err := b.pool.Begin(ctx)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback(ctx)
		var pos int64
		if err := tx.QueryRow(ctx, "SELECT pos FROM cursors WHERE lane = $1 FOR UPDATE", lane).Scan(&pos); err != nil {
			return 0, err
		}
		rows, err := tx.Query(ctx, "SELECT pos, payload FROM lanes WHERE lane = $1 AND pos > $2 ORDER BY pos LIMIT 100", lane, pos)
		if err != nil {
			return 0, err
		}
		n := 0
		for rows.Next() {
			var payload []byte
			if err := rows.Scan(&pos, &payload); err != nil {
				return 0, err
			}
			n++
		}
		if rows.Err() != nil {
			return 0, rows.Err()
		}
		if n == 0 { // lane drained: start over so the measurement keeps going
			pos = 0
		}
		if _, err := tx.Exec(ctx, "UPDATE cursors SET pos = $2 WHERE lane = $1", lane, pos); err != nil {
			return 0, err
		}
		return n, tx.Commit(ctx)
	})
}

// measured is one baseline's throughput and CPU cost.
type measured struct {
	rowsPerSec float64
	cpu        *CPUCost
}

// loop runs fn on conns goroutines for the configured duration and returns rows per second.
func (b *baselines) loop(ctx context.Context, conns int, fn func(ctx context.Context, worker int) (int, error)) (measured, error) {
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	cpu0 := takeCPU(0)
	// As in runner.measure: the window starts after the CPU snapshot, and statements in flight
	// when it ends finish and count, so a short window on a loaded machine still measures.
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Duration+time.Minute)
	defer cancel()
	start := time.Now()
	stopAt := start.Add(b.cfg.Duration)
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				n, err := fn(ctx, w)
				if err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				total.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), takeCPU(0)
	if firstErr != nil {
		return measured{}, firstErr
	}
	rows := float64(total.Load())
	return measured{rowsPerSec: rows / elapsed.Seconds(), cpu: cpu.costSince(cpu0, rows)}, nil
}
