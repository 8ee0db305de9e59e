package bench

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// The streams scenarios run briefly against a real broker: cycles with 1 and 100 state
// operations commit, and a tumbling window's aggregates reach the sink with a latency.
func TestStreamsScenarios(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	for _, tc := range []struct {
		scenario string
		cfg      Config
	}{
		{"streams-cycle", Config{StateOps: 1, Conns: 2, Partitions: 2, Duration: 300 * time.Millisecond}},
		{"streams-cycle", Config{StateOps: 100, Conns: 2, Partitions: 2, Duration: 300 * time.Millisecond}},
		{"streams-window", Config{Rate: 50, Conns: 1, Partitions: 2, Duration: 8 * time.Second}}, // windows of 1 s must close and reach the sink on a loaded machine
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Server = srv.URL
			res, err := Run(context.Background(), tc.scenario, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Messages == 0 || res.Errors != 0 || res.MsgsPerSec <= 0 || res.P50 <= 0 {
				t.Fatalf("result %+v", res)
			}
		})
	}
}
