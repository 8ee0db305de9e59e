package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Config describes one bench run.
type Config struct {
	Server     string        // broker base URL (loopback only)
	DSN        string        // the broker's database, for the same-run PostgreSQL baseline
	PID        int           // broker process id for CPU and RSS; 0 = not measured
	Duration   time.Duration // per measured phase
	Conns      int           // concurrent HTTP connections (producers or consumers)
	Batch      int           // items per push / messages per pop
	Partitions int           // partitions written to / read from
	// Spread is how many of the Partitions each push request's items go to (push scenario):
	// 0 or 1, one partition per request, round robin; N > 1, every request's items spread
	// over N distinct partitions drawn from the Partitions, as a producer batching for many
	// customers does.
	Spread int
	// BaselineConns is the connection count of the same-run baseline; 0: its default (32
	// for single-row commits, 8 for the batch ones). Fewer lets the baseline fit beside a
	// broker on a server with few connections (max_connections 100).
	BaselineConns int
	PayloadBytes  int       // size of the payload's filler string
	Messages      int       // messages to prefill for consume scenarios (0 = derived)
	Groups        int       // consumer groups (fanout)
	AckMode       string    // ack | batch | auto
	Rate          int       // e2e: messages per second offered
	Progress      io.Writer // live progress line; nil = quiet
	StateOps      int       // streams-cycle: state upserts per cycle
	// heldxmin (heldxmin.go); zero values take the defaults in brackets. Partitions is the
	// queue's partitions there (0: 200).
	Windows   int           // measured windows [10]
	Window    time.Duration // each window's length [15 s]
	Producers int           // single-message producers [20]
	Consumers int           // single-message pop + ack consumers [50]
	HoldFrom  int           // first window (1-based) with the snapshot horizon held; 0 = never
	Schema    string        // the broker's schema in DSN (its DB_SCHEMA) [queen_go]
	// Sweep is the sweep scenario's steps, partition counts separated by commas (sweep.go)
	// ["10,1000,10000,100000"]; there Conns is the pushers, Consumers the pop + ack consumers.
	Sweep string
	// RetentionSeconds is the steady scenario's retentionSeconds and completedRetentionSeconds
	// of its queue (steady.go) [120].
	RetentionSeconds int
	// DedupWindowSeconds is the steady scenario's queue's dedupWindowSeconds (0: the queue's
	// default, 900): how long the keys of removed messages stay taken, as tombstones.
	DedupWindowSeconds int
}

func (c Config) params() string {
	s := fmt.Sprintf("batch=%d conns=%d partitions=%d payload=%dB", c.Batch, c.Conns, c.Partitions, c.PayloadBytes)
	if c.Spread > 1 {
		s += fmt.Sprintf(" spread=%d", c.Spread)
	}
	return s
}

// validate refuses knobs that cannot describe a run.
func (c Config) validate() error {
	switch {
	case c.Spread < 0:
		return fmt.Errorf("spread %d: must be 0 or more", c.Spread)
	case c.Spread > 1 && c.Spread > c.Partitions:
		return fmt.Errorf("spread %d: more than the %d partitions", c.Spread, c.Partitions)
	case c.BaselineConns < 0:
		return fmt.Errorf("baseline connections %d: must be 0 or more", c.BaselineConns)
	}
	return nil
}

func (c Config) payload(seq int) string {
	return fmt.Sprintf(`{"seq":%d,"sentAt":%d,"fill":"%s"}`, seq, time.Now().UnixNano(), strings.Repeat("x", c.PayloadBytes))
}
