package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Knobs left zero take the workload; a window longer than the run, or a count of 0
// after defaults, is refused; the windows cover the duration, a partial last one included.
func TestSteadyConfig(t *testing.T) {
	s, err := Config{DSN: "x"}.steady()
	if err != nil {
		t.Fatal(err)
	}
	want := steadyConfig{rate: 2000, producers: 10, consumers: 20, groups: 1, partitions: 5000, batch: 10, retention: 120,
		windows: 20, duration: 20 * time.Minute, window: time.Minute, schema: "queen_go"}
	if s != want {
		t.Errorf("defaults %+v, want %+v", s, want)
	}
	s, err = Config{DSN: "x", Duration: 90 * time.Second, Window: 30 * time.Second, Groups: 3, Rate: 500}.steady()
	if err != nil || s.windows != 3 || s.groups != 3 || s.rate != 500 {
		t.Errorf("90 s in windows of 30 s, 3 groups at 500/s: %+v, %v", s, err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "-db"},
		{Config{DSN: "x", Duration: time.Second, Window: time.Minute}, "window"},
		{Config{DSN: "x", Window: -time.Second}, "window"},
		{Config{DSN: "x", Rate: -1}, "rate"},
	} {
		if _, err := tc.cfg.steady(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSteadyArithmetic(t *testing.T) {
	for _, tc := range []struct {
		d, w time.Duration
		want int
	}{{20 * time.Minute, time.Minute, 20}, {61 * time.Second, time.Minute, 2}, {time.Minute, time.Minute, 1}} {
		if got := steadyWindows(tc.d, tc.w); got != tc.want {
			t.Errorf("steadyWindows(%s, %s) = %d, want %d", tc.d, tc.w, got, tc.want)
		}
	}
	// 10 producers of batches of 10 at 2,000 msgs/s: each sends 20 batches a second.
	if got := steadyPeriod(2000, 10, 10); got != 50*time.Millisecond {
		t.Errorf("steadyPeriod(2000, 10, 10) = %s, want 50ms", got)
	}
	if got := steadyPeriod(500, 10, 10); got != 200*time.Millisecond {
		t.Errorf("steadyPeriod(500, 10, 10) = %s, want 200ms", got)
	}
	// 1,000 pushed to 3 groups, 2,500 acknowledgements in all: 500 left.
	if got := steadyBacklog(1000, 2500, 3); got != 500 {
		t.Errorf("steadyBacklog(1000, 2500, 3) = %d, want 500", got)
	}
}

// A short steady run against a real broker: the producers hold the offered rate, the groups
// keep up, and every window reports the database's figures.
func TestSteadyReportsEveryWindow(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	cfg := Config{Server: srv.URL, DSN: testDSN, PayloadBytes: 20, Partitions: 20, Producers: 2, Batch: 5, Rate: 100,
		Consumers: 2, Groups: 2, RetentionSeconds: 60, Duration: 2500 * time.Millisecond, Window: time.Second}
	res, err := Run(context.Background(), "steady", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steady) != 3 {
		t.Fatalf("%d windows, want 3", len(res.Steady))
	}
	var pushed, acked int64
	for i, w := range res.Steady {
		t.Logf("window %d (%s): push %.0f/s p99 %s, ack %.0f/s p99 %s, backlog %d, %d rows, oldest %s, %d bytes, tables %+v",
			w.Window, w.Elapsed, w.PushPerSec, w.PushP99, w.AckPerSec, w.AckP99, w.Backlog, w.MessageRows, w.OldestAge, w.DatabaseBytes, w.Tables)
		if w.Window != i+1 || w.Errors != 0 || w.DatabaseBytes <= 0 || w.MessageRows <= 0 || w.OldestAge <= 0 || w.Backlog < 0 {
			t.Errorf("window %d: %+v", i+1, w)
		}
		var names []string
		for _, tr := range w.Tables {
			names = append(names, tr.Table)
		}
		if !slices.Contains(names, "messages") || !slices.Contains(names, "partition_work") {
			t.Errorf("window %d: tables %v, want the hot tables", i+1, names)
		}
		pushed, acked = pushed+w.Pushed, acked+w.Acked
	}
	// 100 msgs/s for 2.5 s offered; a loaded machine may fall behind, not ahead.
	if pushed < 100 || pushed > 300 {
		t.Errorf("pushed %d in 2.5 s at 100 msgs/s", pushed)
	}
	if acked == 0 || res.Messages != acked {
		t.Errorf("acked %d, result messages %d", acked, res.Messages)
	}
}
