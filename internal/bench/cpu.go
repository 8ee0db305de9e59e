package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUCost is where a measured phase's CPU went, in CPU microseconds per message (per row for a
// baseline). The machine is shared by broker, PostgreSQL and load generator, so a scenario's
// ratio to its baseline is bounded by the ratio of their CPU costs per message: this is what
// says which share to work on, and how far a target is from what the machine can do.
type CPUCost struct {
	Broker    float64 `json:"brokerUs"`    // the broker process (-pid)
	Database  float64 `json:"databaseUs"`  // every PostgreSQL process: backends, WAL writer, checkpointer…
	Generator float64 `json:"generatorUs"` // this load generator (HTTP client or pgx)
	Machine   float64 `json:"machineUs"`   // all busy CPU of the machine, the above included
}

// cpuSnapshot is cumulative CPU seconds of each side at one instant.
type cpuSnapshot struct {
	broker    float64
	database  map[int]float64 // per PostgreSQL process, so processes that come and go count right
	generator float64
	machine   float64
}

// takeCPU reads the CPU counters of the machine, this process, the broker (pid 0: none) and
// every process named postgres.
func takeCPU(brokerPID int) cpuSnapshot {
	s := cpuSnapshot{generator: cpuSeconds(os.Getpid()), machine: machineBusySeconds(), database: map[int]float64{}}
	if brokerPID > 0 {
		s.broker = cpuSeconds(brokerPID)
	}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == "postgres" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
			s.database[pid] = cpuSeconds(pid)
		}
	}
	return s
}

// costSince is the CPU spent since start, per message.
func (s cpuSnapshot) costSince(start cpuSnapshot, messages float64) *CPUCost {
	if messages <= 0 {
		return nil
	}
	var db float64
	for pid, sec := range s.database {
		db += sec - start.database[pid]
	}
	us := func(sec float64) float64 { return sec * 1e6 / messages }
	return &CPUCost{Broker: us(s.broker - start.broker), Database: us(db),
		Generator: us(s.generator - start.generator), Machine: us(s.machine - start.machine)}
}

// machineBusySeconds is the machine's CPU time not idle nor waiting on I/O, all CPUs summed.
func machineBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var busy float64
	for i, v := range f[1:] {
		if n, err := strconv.ParseFloat(v, 64); err == nil && i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return busy / clockTicks
}
