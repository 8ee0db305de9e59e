package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/mq"
)

// DefaultXminWarn is XMIN_WARN_SECONDS's default: the age of the oldest snapshot past which the
// broker warns. Five minutes of a held horizon already cost the hot tables thousands of dead
// row versions at a few hundred messages per second (docs/operations.md, "A held snapshot
// horizon"), while reports and backups rarely hold one that long.
const DefaultXminWarn = 5 * time.Minute

// horizonCheckInterval is how often the sampling loop reads the horizon to log its warning.
// Reading pg_stat_activity is cheap but not free, and a warning about minutes needs no
// one-second resolution; scrapes read the horizon themselves, fresh.
const horizonCheckInterval = 10 * time.Second

// horizonWatch turns horizon readings into log lines: one WARN when the age passes the
// threshold, another only when it passes it again after falling below or when another session
// becomes the holder past it, and one INFO when it falls below. A line per sample would
// bury the rest of the log for as long as the horizon stays held.
type horizonWatch struct {
	mu     sync.Mutex
	warned bool
	pid    int // holder warned about, while warned
}

// observe logs what h changes relative to the readings before it.
func (w *horizonWatch) observe(log *slog.Logger, h mq.XminHorizon, threshold time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !h.Past(threshold) {
		if w.warned {
			w.warned = false
			log.Info("the oldest database snapshot is younger than XMIN_WARN_SECONDS again",
				"ageSeconds", round1(h.AgeSeconds()), "xminWarnSeconds", threshold.Seconds())
		}
		return
	}
	o := h.Holder
	if w.warned && w.pid == o.PID {
		return
	}
	w.warned, w.pid = true, o.PID
	log.Warn("a database session has held its snapshot longer than XMIN_WARN_SECONDS: until it ends, "+
		"PostgreSQL cannot remove row versions newer than it and the queue tables slow down; "+
		"end that transaction (commit, or SELECT pg_terminate_backend(pid)) or fix the client that leaves it open",
		"pid", o.PID, "application", o.ApplicationName, "state", o.State, "backendType", o.BackendType,
		"ageSeconds", round1(o.AgeSeconds), "xactStart", o.XactStart, "xminWarnSeconds", threshold.Seconds())
}

// round1 rounds to a tenth, enough for a log line about minutes.
func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// CheckHorizon reads the oldest snapshot horizon held on the database and logs the warning of
// XMIN_WARN_SECONDS when it passes the threshold (see horizonWatch). The sampling loop calls it
// every horizonCheckInterval; tests call it directly. A failed read is skipped: the outage is
// logged by the store, and the next check reads again.
func (c *Collector) CheckHorizon(ctx context.Context) {
	if c.opts.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	h, err := c.opts.Store.XminHorizon(ctx)
	cancel()
	if err != nil {
		c.opts.Log.Debug("reading the snapshot horizon failed", "err", err)
		return
	}
	c.horizon.observe(c.opts.Log, h, c.opts.XminWarn)
}

// emitHorizon sends the horizon families (docs/api/admin-api.md §11.2) of one reading.
// The age in seconds is omitted when the holder is hidden (mq.XminHolder.Hidden): unknown, not 0.
func (c *Collector) emitHorizon(ch chan<- prometheus.Metric, h mq.XminHorizon) {
	if h.Holder == nil || h.AgeKnown() {
		emit(ch, "queen_db_oldest_xmin_age_seconds",
			"Seconds the oldest snapshot of a transaction on the database has been held (0: none); vacuum keeps every row version newer than it.",
			false, h.AgeSeconds())
	}
	emit(ch, "queen_db_oldest_xmin_warning", "1 when queen_db_oldest_xmin_age_seconds is past XMIN_WARN_SECONDS.",
		false, gauge(h.Past(c.opts.XminWarn)))
	var txn, repl, catalog int64
	if h.Holder != nil {
		txn = h.Holder.XidAge
	}
	for _, r := range h.Replication {
		if r.XminAge != nil {
			repl = max(repl, *r.XminAge)
		}
		if r.CatalogXminAge != nil {
			catalog = max(catalog, *r.CatalogXminAge)
		}
	}
	const help = "Transaction ids begun since the oldest horizon of each source (0: none): transaction (that of queen_db_oldest_xmin_age_seconds), replication (slots' xmin and walsenders), replication_catalog (slots' catalog_xmin, which holds back the system catalogs only)."
	emit(ch, "queen_db_oldest_xmin_age_transactions", help, false, float64(txn), "source", "transaction")
	emit(ch, "queen_db_oldest_xmin_age_transactions", help, false, float64(repl), "source", "replication")
	emit(ch, "queen_db_oldest_xmin_age_transactions", help, false, float64(catalog), "source", "replication_catalog")
	emit(ch, "queen_db_replication_xmin_holders", "Replication slots and walsenders holding a snapshot horizon on the database.",
		false, float64(len(h.Replication)))
}
