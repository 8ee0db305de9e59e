package testkit

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// LogBuffer is a buffer (a log, a command's output) the code under test writes while the test
// reads it, which a bytes.Buffer is not safe for. When Tee is set, every write goes there too
// (a test's t.Output()).
type LogBuffer struct {
	Tee io.Writer
	mu  sync.Mutex
	buf bytes.Buffer
}

// Logger returns a slog text logger at level Info writing to b.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Write appends p (and writes it to Tee).
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.Tee != nil {
		return b.Tee.Write(p)
	}
	return len(p), nil
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines is everything written so far, one entry per line (none when empty).
func (b *LogBuffer) Lines() []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
