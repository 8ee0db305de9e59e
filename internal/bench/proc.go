package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat on Linux.
const clockTicks = 100

// procSampler reads a process's RSS from /proc while a scenario runs (its CPU time comes
// from the cpuSnapshot around the phase).
type procSampler struct {
	pid     int
	peakRSS int64
	stop    chan struct{}
	done    chan struct{}
}

// startSampler begins sampling pid's RSS every 100 ms; pid 0 samples nothing.
func startSampler(ctx context.Context, pid int) *procSampler {
	s := &procSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			s.peakRSS = max(s.peakRSS, rssBytes(pid))
			select {
			case <-t.C:
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// finish stops sampling and returns the peak RSS seen.
func (s *procSampler) finish() (peakRSS int64) {
	if s.pid == 0 {
		return 0
	}
	close(s.stop)
	<-s.done
	return max(s.peakRSS, rssBytes(s.pid))
}

func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (which may contain spaces) start after the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

func rssBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
