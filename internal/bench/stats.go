// Package bench drives a running broker over HTTP and measures PostgreSQL's own limit on the
// same database in the same run, so results are ratios that survive a noisy machine.
package bench

import (
	"slices"
	"sync"
	"time"
)

// Result is one scenario's measurement.
type Result struct {
	Scenario string `json:"scenario"`
	Params   string `json:"params"`
	Messages int64  `json:"messages"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	// Buffered counts pushed items the broker spooled instead of writing (its database was
	// too slow or away): they are left out of Messages and MsgsPerSec.
	Buffered     int64         `json:"buffered,omitempty"`
	Elapsed      time.Duration `json:"elapsedNs"`
	MsgsPerSec   float64       `json:"msgsPerSec"`
	P50          time.Duration `json:"p50Ns"`
	P99          time.Duration `json:"p99Ns"`
	P999         time.Duration `json:"p999Ns"`
	CPUSeconds   float64       `json:"brokerCpuSeconds,omitempty"`
	PeakRSSBytes int64         `json:"brokerPeakRssBytes,omitempty"`
	CPU          *CPUCost      `json:"cpu,omitempty"`
	Baseline     *Baseline     `json:"baseline,omitempty"`
	Ratio        float64       `json:"ratio,omitempty"`
	// RequestsPerCall is the mean number of pop, ack and transaction requests the broker merged
	// into one database call during the phase, per kind (docs/design.md, "Group commit for
	// consumers"); 1 means nothing was merged.
	RequestsPerCall map[string]float64 `json:"requestsPerCall,omitempty"`
	// Windows, Tables and TablesSource are the heldxmin scenario's per-window figures and the
	// row versions of the broker's hot tables at its end (heldxmin.go).
	Windows      []HeldWindow `json:"windows,omitempty"`
	Tables       []TableRows  `json:"tables,omitempty"`
	TablesSource string       `json:"tablesSource,omitempty"`
	// Sweep and SweepRatios are the sweep scenario's steps and the shares of the largest
	// step's rates in the smallest's and the reference step's (sweep.go).
	Sweep       []SweepStep  `json:"sweep,omitempty"`
	SweepRatios []SweepRatio `json:"sweepRatios,omitempty"`
	// Steady is the steady scenario's windows (steady.go).
	Steady []SteadyWindow `json:"steady,omitempty"`
}

// Baseline is PostgreSQL's own throughput for the comparable plain-table workload.
type Baseline struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind,omitempty"`  // BaselineSingle, BaselineBatch or BaselineCursor
	Conns      int      `json:"conns,omitempty"` // its connections
	RowsPerSec float64  `json:"rowsPerSec"`
	CPU        *CPUCost `json:"cpu,omitempty"`
}

// recorder collects request latencies and counts from many goroutines.
type recorder struct {
	mu        sync.Mutex
	latencies []time.Duration
	msgs      int64
	reqs      int64
	errs      int64
	buffered  int64
}

// spooled counts items a push answer reported buffered.
func (r *recorder) spooled(n int) {
	r.mu.Lock()
	r.buffered += int64(n)
	r.mu.Unlock()
}

// pushed records a push answered after lat: n items sent, less the buffered ones the broker
// spooled, which count apart.
func (r *recorder) pushed(lat time.Duration, n, buffered int) {
	r.ok(lat, n-buffered)
	if buffered > 0 {
		r.spooled(buffered)
	}
}

func (r *recorder) ok(lat time.Duration, msgs int) {
	r.mu.Lock()
	r.latencies = append(r.latencies, lat)
	r.msgs += int64(msgs)
	r.reqs++
	r.mu.Unlock()
}

func (r *recorder) fail() {
	r.mu.Lock()
	r.errs++
	r.reqs++
	r.mu.Unlock()
}

func (r *recorder) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs
}

// result summarises the recording over elapsed.
func (r *recorder) result(name, params string, elapsed time.Duration) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := slices.Clone(r.latencies)
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	return Result{Scenario: name, Params: params, Messages: r.msgs, Requests: r.reqs, Errors: r.errs, Buffered: r.buffered,
		Elapsed: elapsed, MsgsPerSec: float64(r.msgs) / elapsed.Seconds(), P50: q(0.50), P99: q(0.99), P999: q(0.999)}
}
