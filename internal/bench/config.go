package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Config describes one bench run.
type Config struct {
	Server       string        // broker base URL (loopback only)
	DSN          string        // the broker's database, for the same-run PostgreSQL baseline
	PID          int           // broker process id for CPU and RSS; 0 = not measured
	Duration     time.Duration // per measured phase
	Conns        int           // concurrent HTTP connections (producers or consumers)
	Batch        int           // items per push / messages per pop
	Partitions   int           // partitions written to / read from
	PayloadBytes int           // size of the payload's filler string
	Messages     int           // messages to prefill for consume scenarios (0 = derived)
	Groups       int           // consumer groups (fanout)
	AckMode      string        // ack | batch | auto
	Rate         int           // e2e: messages per second offered
	StateOps     int           // streams-cycle: state upserts per cycle
	Progress     io.Writer     // live progress line; nil = quiet
}

func (c Config) params() string {
	return fmt.Sprintf("batch=%d conns=%d partitions=%d payload=%dB", c.Batch, c.Conns, c.Partitions, c.PayloadBytes)
}

func (c Config) payload(seq int) string {
	return fmt.Sprintf(`{"seq":%d,"sentAt":%d,"fill":"%s"}`, seq, time.Now().UnixNano(), strings.Repeat("x", c.PayloadBytes))
}
