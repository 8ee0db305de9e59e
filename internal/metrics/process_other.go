//go:build !unix

package metrics

// processCPU is not measured on this platform.
func processCPU() cpuTimes { return cpuTimes{} }

// processMemory is not measured on this platform.
func processMemory() (rss, virtual int64) { return 0, 0 }
