package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

var testDSN string

func TestMain(m *testing.M) {
	testserver.Main(m, &testDSN, m.Run)
}

// A baseline runs on Config.BaselineConns connections when set, else on 32 for single-row
// commits and 8 for the batch kinds.
func TestBaselineConnsDefaults(t *testing.T) {
	for _, tc := range []struct {
		set  int
		kind string
		want int
	}{{0, BaselineSingle, 32}, {0, BaselineBatch, 8}, {0, BaselineCursor, 8}, {3, BaselineSingle, 3}, {5, BaselineCursor, 5}} {
		if got := baselineConns(Config{BaselineConns: tc.set}, tc.kind); got != tc.want {
			t.Fatalf("BaselineConns %d, %s: %d connections, want %d", tc.set, tc.kind, got, tc.want)
		}
	}
}

// Each scenario runs briefly against a real broker and reports messages and a baseline ratio.
func TestScenariosMeasureAgainstTheSameRunBaseline(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	for _, tc := range []struct {
		scenario string
		cfg      Config
	}{
		// Baselines run on 2 connections: the defaults (32 and 8, TestBaselineConnsDefaults)
		// would take the test suite past its connection budget (docs/operations.md).
		{"push", Config{Batch: 10, Conns: 4, Partitions: 2, BaselineConns: 2}},
		// each request's 10 items over 5 of 12 partitions
		{"push", Config{Batch: 10, Conns: 4, Partitions: 12, Spread: 5, BaselineConns: 2}},
		{"popack", Config{Batch: 10, Conns: 2, Partitions: 2, AckMode: "batch", Messages: 200, BaselineConns: 2}},
		{"popack", Config{Batch: 1, Conns: 2, Partitions: 2, AckMode: "ack", Messages: 50, BaselineConns: 2}},
		{"txn", Config{Conns: 2, Partitions: 2, Messages: 50, BaselineConns: 2}},
	} {
		t.Run(fmt.Sprintf("%s/%s/spread=%d", tc.scenario, tc.cfg.AckMode, tc.cfg.Spread), func(t *testing.T) {
			cfg := tc.cfg
			cfg.Server, cfg.DSN, cfg.Duration, cfg.PayloadBytes = srv.URL, testDSN, 300*time.Millisecond, 20
			// The shared server can refuse connections for a moment when other clients fill it;
			// such a refusal is retried (a minute at most), any other error fails at once.
			var res Result
			var err error
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) { // a bounded retry
				res, err = Run(context.Background(), tc.scenario, cfg)
				if !pgtest.TooManyClients(err) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Messages == 0 || res.Errors != 0 || res.MsgsPerSec <= 0 {
				t.Fatalf("result %+v", res)
			}
			if res.Baseline == nil || res.Baseline.RowsPerSec <= 0 || res.Ratio <= 0 {
				t.Fatalf("no same-run baseline: %+v", res)
			}
			// The broker runs in this process here, so the load generator's share holds it.
			// (Counters tick every 10 ms, so only their presence is checked.)
			for name, c := range map[string]*CPUCost{"scenario": res.CPU, "baseline": res.Baseline.CPU} {
				if c == nil || c.Generator <= 0 || c.Machine <= 0 || c.Database < 0 {
					t.Fatalf("%s CPU cost %+v: want the generator's and the machine's", name, c)
				}
			}
			want := BaselineCursor
			if tc.scenario == "push" || tc.scenario == "txn" || cfg.Batch < 100 {
				want = BaselineSingle
			}
			conns := baselineConns(cfg, want)
			if res.Baseline.Kind != want || res.Baseline.Conns != conns ||
				res.Baseline.Name != fmt.Sprintf("%s, %d connections", want, conns) {
				t.Fatalf("baseline %q (%q on %d connections), want %q on %d", res.Baseline.Name,
					res.Baseline.Kind, res.Baseline.Conns, want, conns)
			}
			if cfg.Spread > 1 && !strings.Contains(res.Params, fmt.Sprintf("spread=%d", cfg.Spread)) {
				t.Fatalf("params %q do not show the spread", res.Params)
			}
		})
	}
}

func TestOnlyLoopbackIsTargeted(t *testing.T) {
	_, err := Run(context.Background(), "push", Config{Server: "http://192.0.2.1:6632", Conns: 1, Batch: 1, Partitions: 1})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("err %v, want a refusal to target a non-loopback address", err)
	}
}

// The spool scenario measures pushes the broker spools (docs/api/operations.md §4.1): here
// push maintenance sends every push to the spool; a push the database took instead is an
// error of the scenario, so a run against a healthy broker cannot pass for a spool figure.
func TestSpoolScenarioCountsOnlyBufferedPushes(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	api, err := newAPIClient(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	maintenance := func(on bool) {
		t.Helper()
		body := []byte(`{"enabled":false}`)
		if on {
			body = []byte(`{"enabled":true}`)
		}
		if _, err := api.call(context.Background(), "POST", "/api/v1/system/maintenance", body, nil); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Server: srv.URL, Batch: 10, Conns: 4, Partitions: 2, Duration: 300 * time.Millisecond, PayloadBytes: 20}

	maintenance(true)
	res, err := Run(context.Background(), "spool", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scenario != "spool" || res.Messages == 0 || res.Errors != 0 || res.MsgsPerSec <= 0 || res.Baseline != nil {
		t.Fatalf("spooled: %+v", res)
	}

	// Once the spool is replayed, pushes reach the database again.
	maintenance(false)
	testkit.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
		var b struct {
			Pending int `json:"pending"`
		}
		if _, err := api.call(context.Background(), "GET", "/api/v1/status/buffers", nil, &b); err != nil {
			return err
		}
		if b.Pending != 0 {
			return fmt.Errorf("%d spooled pushes still to replay", b.Pending)
		}
		return nil
	})
	res, err = Run(context.Background(), "spool", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 0 || res.Errors == 0 {
		t.Fatalf("database up: %+v, want every push counted as an error (queued, not buffered)", res)
	}
}

// A spread request's items go to distinct partitions within range, and different requests
// draw different sets; the same seed draws the same sets (runs stay comparable).
func TestSpreadPartsDrawDistinctPartitionsPerRequest(t *testing.T) {
	sets := spreadParts(500, 100, spreadBodies)
	if len(sets) != spreadBodies {
		t.Fatalf("%d request shapes, want %d", len(sets), spreadBodies)
	}
	seen := map[string]bool{}
	for k, parts := range sets {
		if len(parts) != 100 {
			t.Fatalf("request %d: %d partitions, want 100", k, len(parts))
		}
		distinct := map[int]bool{}
		for _, p := range parts {
			if p < 0 || p >= 500 || distinct[p] {
				t.Fatalf("request %d: partition %d out of range or repeated in %v", k, p, parts)
			}
			distinct[p] = true
		}
		seen[fmt.Sprint(parts)] = true
	}
	if len(seen) < spreadBodies/2 {
		t.Fatalf("only %d distinct partition sets among %d requests", len(seen), spreadBodies)
	}
	if again := spreadParts(500, 100, spreadBodies); fmt.Sprint(again) != fmt.Sprint(sets) {
		t.Fatal("the same seed drew different sets")
	}
}

// Knobs that cannot describe a run are refused before anything is sent.
func TestConfigRefusesImpossibleKnobs(t *testing.T) {
	for _, cfg := range []Config{
		{Server: "http://127.0.0.1:1", Batch: 10, Conns: 1, Partitions: 10, Spread: 11},
		{Server: "http://127.0.0.1:1", Batch: 10, Conns: 1, Partitions: 10, Spread: -1},
		{Server: "http://127.0.0.1:1", Batch: 10, Conns: 1, Partitions: 10, BaselineConns: -1},
	} {
		if _, err := Run(context.Background(), "push", cfg); err == nil || !strings.Contains(err.Error(), "must be") && !strings.Contains(err.Error(), "more than") {
			t.Fatalf("%+v: err %v, want a refusal of the knob", cfg, err)
		}
	}
}
