package mq

import (
	"errors"
	"time"
)

// Bounded answers (docs/api/operations.md §9.5, docs/api/admin-api.md §5.1, §6): every time
// series has at most MaxSeriesPoints points, a wider window is answered in coarser buckets,
// and a window wider than MaxWindow is refused. These bounds are what keeps a read-only
// token from asking for millions of points (four years per minute was 108 MiB).

// MaxSeriesPoints is the most points any series answers.
const MaxSeriesPoints = 1440

// MaxWindow is the widest window a series answers: 1,440 buckets of a day.
const MaxWindow = 1440 * 24 * time.Hour

// MaxSeriesQueues is the most queues a per-queue analytics route answers; DefaultSeriesQueues
// is how many it answers when the request says nothing (docs/api/admin-api.md §6).
const (
	MaxSeriesQueues     = 100
	DefaultSeriesQueues = 10
)

// MaxListRows is the most rows one page of any listing holds (docs/api/admin-api.md, Listing parameters).
const MaxListRows = 1000

// ErrWindowTooLarge is a window wider than MaxWindow (400 "Time window too large").
var ErrWindowTooLarge = errors.New("time window too large")

// ErrInvalidTimeRange is a window whose from is after its to (400 "Invalid time range").
var ErrInvalidTimeRange = errors.New("invalid time range")

// bucketEpoch is the origin buckets are aligned to; the SQL statements bin with the same
// origin (date_bin(…, timestamptz '2000-01-01')), so a bucket's start here is its start there.
var bucketEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// bucketLadder is docs/api/admin-api.md §5.1's bucket size by window length; each rung keeps a window
// of its length at or under MaxSeriesPoints buckets.
var bucketLadder = []struct {
	upTo    time.Duration
	minutes int
}{
	{2 * time.Hour, 1},
	{12 * time.Hour, 5},
	{48 * time.Hour, 15},
	{7 * 24 * time.Hour, 60},
	{90 * 24 * time.Hour, 360},
	{MaxWindow, 1440},
}

// SeriesWindow plans the buckets of a series from from to to by the ladder of docs/api/admin-api.md
// §5.1. A window that does not start on a bucket boundary touches one bucket more than its
// length holds; at the widest rung that could be bucket 1,441, so the oldest buckets are
// dropped (Start moves forward) rather than exceed MaxSeriesPoints.
func SeriesWindow(from, to time.Time) (Window, error) {
	if from.After(to) {
		return Window{}, ErrInvalidTimeRange
	}
	d := to.Sub(from)
	for _, r := range bucketLadder {
		if d <= r.upTo {
			w := Window{From: from, To: to, BucketMinutes: r.minutes}
			w.Start = clipStart(binStart(from, w.step()), binStart(to, w.step()), w.step())
			return w, nil
		}
	}
	return Window{}, ErrWindowTooLarge
}

// step is the bucket length.
func (w Window) step() time.Duration { return time.Duration(w.BucketMinutes) * time.Minute }

// SeriesFrom is where the statements start reading: the first bucket's start when the window
// was clipped, otherwise From (the statements bin it themselves).
func (w Window) SeriesFrom() time.Time {
	if w.Start.After(w.From) {
		return w.Start
	}
	return w.From
}

// Points is how many buckets the window touches, the most points a series of it can have.
func (w Window) Points() int {
	if w.BucketMinutes <= 0 || w.From.After(w.To) {
		return 0
	}
	step := w.step()
	return int(binStart(w.To, step).Sub(binStart(w.SeriesFrom(), step))/step) + 1
}

// Check refuses a window whose series would exceed MaxSeriesPoints: the read side's own guard,
// whatever the caller planned.
func (w Window) Check() error {
	switch {
	case w.From.After(w.To):
		return ErrInvalidTimeRange
	case w.BucketMinutes <= 0 || w.Points() > MaxSeriesPoints:
		return ErrWindowTooLarge
	}
	return nil
}

// binStart is the start of the bucket of length step holding t.
func binStart(t time.Time, step time.Duration) time.Time {
	return bucketEpoch.Add(t.Sub(bucketEpoch).Truncate(step)).In(t.Location())
}

// clipStart keeps at most MaxSeriesPoints buckets from first to last.
func clipStart(first, last time.Time, step time.Duration) time.Time {
	if oldest := last.Add(-(MaxSeriesPoints - 1) * step); first.Before(oldest) {
		return oldest
	}
	return first
}

// Interval units of GET /api/v1/status/analytics, finest first.
var intervalUnits = []string{"minute", "hour", "day"}

// IntervalWindow plans GET /api/v1/status/analytics (docs/api/admin-api.md §5.2): the requested unit
// (minute, hour or day) when the window holds at most MaxSeriesPoints of them, else the next
// coarser unit that fits; start is the first bucket to read (the one holding from, moved
// forward as SeriesWindow does at the widest rung).
func IntervalWindow(from, to time.Time, unit string) (used string, start time.Time, err error) {
	if from.After(to) {
		return "", start, ErrInvalidTimeRange
	}
	if to.Sub(from) > MaxWindow {
		return "", start, ErrWindowTooLarge
	}
	i := 0
	for i < len(intervalUnits) && intervalUnits[i] != unit {
		i++
	}
	// A window "holds" as many buckets as its length divided by the unit; the partial buckets
	// at its ends can make one more, which clipStart drops (the oldest, partial one), so a day
	// of minutes stays at minutes.
	for ; i < len(intervalUnits); i++ {
		step := unitStep(intervalUnits[i])
		if to.Sub(from) <= MaxSeriesPoints*step {
			return intervalUnits[i], clipStart(truncUnit(from, intervalUnits[i]), truncUnit(to, intervalUnits[i]), step), nil
		}
	}
	return "", start, ErrWindowTooLarge
}

// IntervalPoints is how many buckets of unit lie from start to to (date_trunc in UTC).
func IntervalPoints(start, to time.Time, unit string) int {
	step := unitStep(unit)
	if step == 0 || start.After(to) {
		return 0
	}
	return int(truncUnit(to, unit).Sub(truncUnit(start, unit))/step) + 1
}

func unitStep(unit string) time.Duration {
	switch unit {
	case "minute":
		return time.Minute
	case "hour":
		return time.Hour
	case "day":
		return 24 * time.Hour
	}
	return 0
}

// truncUnit is date_trunc(unit, t, 'UTC').
func truncUnit(t time.Time, unit string) time.Time {
	return t.UTC().Truncate(unitStep(unit))
}
