package spool

import (
	"cmp"
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
)

// WriteFunc writes a batch of records to the database as one push (one transaction), with
// their minted ids and keys, and reports how many it dropped as duplicates because their key
// was already taken. An error means nothing of the batch is known to be written; the batch is
// written again, whole, later.
type WriteFunc func(ctx context.Context, recs []Record) (duplicates int, err error)

// DrainerOptions configure a Drainer. Write is required; the rest take defaults when zero.
type DrainerOptions struct {
	Write WriteFunc
	// Slow reports whether a failed Write only passed its deadline on a database that answers
	// (load, not an outage; docs/api/operations.md §9.7). Such a batch is retried at once in
	// halves, down to a single record, which goes to WriteSlow. Nil: never.
	Slow func(error) bool
	// WriteSlow writes a single record that was too slow for Write, with a longer deadline
	// (DB_STATEMENT_TIMEOUT). Nil: Write.
	WriteSlow WriteFunc
	// Ready reports whether replay may run: the database is available and push maintenance
	// is off. Checked before every batch; nil means always.
	Ready func() bool
	// FlushInterval is how often an idle drainer checks for work (FILE_BUFFER_FLUSH_MS), and
	// the first back-off after a failed batch.
	FlushInterval time.Duration
	MaxBatch      int           // records per Write (FILE_BUFFER_MAX_BATCH)
	MaxBackoff    time.Duration // cap of the back-off between retries of a failing batch
	// Sleep waits d or until ctx ends, reporting false when ctx ended. Nil: a timer. Tests
	// record the back-off instead of waiting it out.
	Sleep  func(ctx context.Context, d time.Duration) bool
	Logger *slog.Logger
	Clock  func() time.Time
}

// DrainStats are the drainer's figures for the buffer status.
type DrainStats struct {
	Pending    int   // records in the spool not yet replayed
	Failed     int   // records of the batch currently failing (0 when the last batch succeeded)
	Replayed   int64 // records committed as replayed since Start, duplicates included
	Duplicates int64 // of those, records the database dropped as duplicates
}

// Drainer is the background replay: a lifecycle part whose one goroutine moves the spool's
// records to the database, oldest first, while Ready holds. Once it starts it replays batch
// after batch without pausing until the spool is empty; a failing batch is retried, with
// back-off, until it succeeds — never skipped, reordered or dropped.
type Drainer struct {
	lifecycle.StartStop
	lifecycle.Base

	sp   *Spool
	o    DrainerOptions
	kick chan struct{}

	failed               atomic.Int64
	replayed, duplicates atomic.Int64
}

// NewDrainer returns a drainer of sp; Start runs it.
func NewDrainer(sp *Spool, o DrainerOptions) *Drainer {
	o.FlushInterval = cmp.Or(max(o.FlushInterval, 0), DefaultFlushInterval)
	o.MaxBatch = cmp.Or(max(o.MaxBatch, 0), DefaultMaxBatch)
	o.MaxBackoff = cmp.Or(max(o.MaxBackoff, 0), DefaultMaxBackoff)
	if o.Ready == nil {
		o.Ready = func() bool { return true }
	}
	if o.Sleep == nil {
		o.Sleep = lifecycle.Sleep
	}
	return &Drainer{
		Base: lifecycle.NewBase("spool-drainer", o.Logger, o.Clock),
		sp:   sp,
		o:    o,
		kick: make(chan struct{}, 1),
	}
}

// Start runs the drain loop until Stop. Stop cancels the context of a Write in flight; its
// batch, not committed, is replayed again by the next run.
func (d *Drainer) Start(ctx context.Context) error {
	return d.StartWith(ctx, func(context.Context) error {
		d.Go(d.run)
		return nil
	})
}

// Kick makes the drainer check for work now rather than at its next tick: when pushes were
// spooled, or Ready may have turned true (push maintenance off).
func (d *Drainer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Stats returns the drainer's figures.
func (d *Drainer) Stats() DrainStats {
	return DrainStats{
		Pending:    d.sp.Pending(),
		Failed:     int(d.failed.Load()),
		Replayed:   d.replayed.Load(),
		Duplicates: d.duplicates.Load(),
	}
}

func (d *Drainer) run(ctx context.Context) {
	t := time.NewTicker(d.o.FlushInterval)
	defer t.Stop()
	for {
		d.drain(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
	}
}

// drain replays until the spool is empty, Ready turns false or ctx ends. A batch that is only
// too slow (Slow) is retried at once in halves, down to one record written by WriteSlow;
// after a success the batch size doubles again up to MaxBatch. Any other failure is retried
// whole, with back-off.
func (d *Drainer) drain(ctx context.Context) {
	var backoff time.Duration
	size, slow := d.o.MaxBatch, false
	for ctx.Err() == nil && d.sp.Pending() > 0 && d.o.Ready() {
		b, err := d.sp.Next(size)
		if err == nil && len(b.Records) == 0 {
			return
		}
		dups := 0
		if err == nil {
			write := d.o.Write
			if slow && d.o.WriteSlow != nil {
				write = d.o.WriteSlow
			}
			dups, err = write(ctx, b.Records)
			if err == nil {
				// Written but not committed, the batch comes back and its keys drop it.
				err = d.sp.Commit(b)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if d.o.Slow != nil && d.o.Slow(err) && !slow {
				if len(b.Records) > 1 {
					size = len(b.Records) / 2
				} else {
					slow = true
				}
				d.Logger().Info("spool: replay of a batch passed its deadline on a busy database; retrying smaller",
					"records", len(b.Records), "next", size, "statement_timeout", slow)
				continue
			}
			d.failed.Store(int64(len(b.Records)))
			backoff = min(max(2*backoff, d.o.FlushInterval), d.o.MaxBackoff)
			d.Logger().Warn("spool: replay of a batch failed; retrying", "records", len(b.Records),
				"retry_in", backoff, "error", err)
			if !d.o.Sleep(ctx, backoff) {
				return
			}
			continue
		}
		backoff, slow = 0, false
		size = min(2*size, d.o.MaxBatch)
		d.failed.Store(0)
		d.replayed.Add(int64(len(b.Records)))
		d.duplicates.Add(int64(dups))
		if dups > 0 {
			d.Logger().Debug("spool: replay dropped duplicates", "duplicates", dups, "records", len(b.Records))
		}
	}
}
