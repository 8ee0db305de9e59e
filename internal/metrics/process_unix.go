//go:build unix

package metrics

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// processCPU reads the CPU time this process has used.
func processCPU() cpuTimes {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpuTimes{}
	}
	return cpuTimes{
		user: int64(ru.Utime.Sec)*1e6 + int64(ru.Utime.Usec),
		sys:  int64(ru.Stime.Sec)*1e6 + int64(ru.Stime.Usec),
	}
}

// processMemory reads the resident and virtual size from /proc (Linux); zeros elsewhere.
func processMemory() (rss, virtual int64) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0
	}
	size, _ := strconv.ParseInt(string(f[0]), 10, 64)
	res, _ := strconv.ParseInt(string(f[1]), 10, 64)
	page := int64(os.Getpagesize())
	return res * page, size * page
}
