package mq

import (
	"errors"
	"testing"
	"time"
)

func TestSeriesWindowStaysWithinBounds(t *testing.T) {
	base := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, c := range []struct {
		from, to       time.Time
		bucket, points int
	}{
		{base, base.Add(2 * time.Hour), 1, 121},
		{base, base.Add(90 * day), 360, 361},
		{base, base.Add(1440 * day), 1440, 1440},                                // 1,441 boundaries: oldest dropped
		{base.Add(7 * time.Hour), base.Add(1440*day + 7*time.Hour), 1440, 1440}, // unaligned
		{base.Add(30 * time.Second), base.Add(time.Hour + 30*time.Second), 1, 61},
	} {
		w, err := SeriesWindow(c.from, c.to)
		if err != nil || w.BucketMinutes != c.bucket || w.Points() != c.points || w.Check() != nil {
			t.Errorf("%v..%v: bucket %d, %d points, %v; want %d, %d", c.from, c.to, w.BucketMinutes, w.Points(), err, c.bucket, c.points)
		}
	}
	if _, err := SeriesWindow(base, base.Add(1440*day+time.Millisecond)); !errors.Is(err, ErrWindowTooLarge) {
		t.Errorf("1,440 days + 1 ms: %v", err)
	}
	if _, err := SeriesWindow(base.Add(time.Second), base); !errors.Is(err, ErrInvalidTimeRange) {
		t.Errorf("from after to: %v", err)
	}
	// The read side refuses a window planned by hand past the bound.
	if err := (Window{From: base, To: base.Add(4 * 365 * day), BucketMinutes: 1}).Check(); !errors.Is(err, ErrWindowTooLarge) {
		t.Errorf("four years per minute: %v", err)
	}
}

func TestIntervalWindowFallsBackToCoarserUnits(t *testing.T) {
	base := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, c := range []struct {
		unit   string
		span   time.Duration
		used   string
		points int
	}{
		{"minute", day, "minute", 1440},
		{"minute", day + time.Minute, "hour", 25},
		{"hour", 60 * day, "hour", 1440},
		{"hour", 61 * day, "day", 62},
		{"day", 1440 * day, "day", 1440},
	} {
		used, start, err := IntervalWindow(base, base.Add(c.span), c.unit)
		if n := IntervalPoints(start, base.Add(c.span), used); err != nil || used != c.used || n != c.points {
			t.Errorf("%s over %v: %s with %d points (%v), want %s with %d", c.unit, c.span, used, n, err, c.used, c.points)
		}
	}
	if _, _, err := IntervalWindow(base, base.Add(4*365*day), "minute"); !errors.Is(err, ErrWindowTooLarge) {
		t.Errorf("four years: %v", err)
	}
}
