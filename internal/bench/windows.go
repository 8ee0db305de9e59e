package bench

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// windowRecs hands a windowed scenario's workers the recordings of the window current when a
// request answers: one R per window, and a discarded one for the answers before the first
// window starts and after the last one ends.
type windowRecs[R any] struct {
	recs    []R
	discard R
	cur     atomic.Int64 // -1 before the first window, 0..len(recs)-1 a window, len(recs) after
}

// newWindowRecs is n windows' recordings, before the first window.
func newWindowRecs[R any](n int) *windowRecs[R] {
	w := &windowRecs[R]{recs: make([]R, n)}
	w.cur.Store(-1)
	return w
}

// current is the recordings of the window now running, or the discarded ones.
func (w *windowRecs[R]) current() *R {
	if i := w.cur.Load(); i >= 0 && i < int64(len(w.recs)) {
		return &w.recs[i]
	}
	return &w.discard
}

// start makes window i (0-based) the current one; start(len) ends the last.
func (w *windowRecs[R]) start(i int) { w.cur.Store(int64(i)) }

// stop ends the last window: workers stop starting requests.
func (w *windowRecs[R]) stop() { w.start(len(w.recs)) }

// running is whether workers should start another request: the last window has not ended
// and ctx has not.
func (w *windowRecs[R]) running(ctx context.Context) bool {
	return w.cur.Load() < int64(len(w.recs)) && ctx.Err() == nil
}

// windowTotals sums every window's recordings once the workers have stopped (no lock
// needed): latencies and messages are measured's, requests and errors both recorders', and
// the spooled items push's.
func windowTotals[R any](w *windowRecs[R], parts func(*R) (measured, push *recorder)) *recorder {
	all := &recorder{}
	for i := range w.recs {
		m, p := parts(&w.recs[i])
		all.latencies = append(all.latencies, m.latencies...)
		all.msgs += m.msgs
		all.reqs += m.reqs + p.reqs
		all.errs += m.errs + p.errs
		all.buffered += p.buffered
	}
	return all
}

// pushRecorded sends one push of n items and records it in the recorder rec returns when the
// answer comes: the items the broker wrote, its spooled ones apart, or a failure unless ctx
// has ended. It reports whether the broker took the push.
func (r *runner) pushRecorded(ctx context.Context, body []byte, n int, rec func() *recorder) bool {
	t := time.Now()
	var ans pushAnswer
	_, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, &ans)
	into := rec()
	if err != nil {
		if ctx.Err() == nil {
			into.fail()
		}
		return false
	}
	into.pushed(time.Since(t), n, ans.Buffered)
	return true
}

// collectTableRows reads rows of (table, n_live_tup, n_dead_tup).
func collectTableRows(rows pgx.Rows) ([]TableRows, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableRows, error) {
		var t TableRows
		return t, row.Scan(&t.Table, &t.Live, &t.Dead)
	})
}
