package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
	"github.com/queen-go/queen/internal/testserver"
)

var testDSN string

func TestMain(m *testing.M) {
	testserver.Main(m, &testDSN, m.Run)
}

// Each scenario runs briefly against a real broker and reports messages and a baseline ratio.
func TestScenariosMeasureAgainstTheSameRunBaseline(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	for _, tc := range []struct {
		scenario string
		cfg      Config
	}{
		{"push", Config{Batch: 10, Conns: 4, Partitions: 2}},
		{"popack", Config{Batch: 10, Conns: 2, Partitions: 2, AckMode: "batch", Messages: 200}},
		{"popack", Config{Batch: 1, Conns: 2, Partitions: 2, AckMode: "ack", Messages: 50}},
		{"txn", Config{Conns: 2, Partitions: 2, Messages: 50}},
	} {
		t.Run(tc.scenario+"/"+tc.cfg.AckMode, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Server, cfg.DSN, cfg.Duration, cfg.PayloadBytes = srv.URL, testDSN, 300*time.Millisecond, 20
			res, err := Run(context.Background(), tc.scenario, cfg)
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
			if res.Baseline.Name != want {
				t.Fatalf("baseline %q, want %q", res.Baseline.Name, want)
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
