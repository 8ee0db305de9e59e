package mq

import "time"

// Job names: the keys of the jobs' advisory locks and of their states.
const (
	JobRetention         = "retention"
	JobEviction          = "eviction"
	JobLeaseHousekeeping = "lease_housekeeping"
	JobStats             = "stats"
)

// JobNames lists every job in the order /health reports them.
var JobNames = []string{JobRetention, JobEviction, JobLeaseHousekeeping, JobStats}

// JobState is what this instance knows of one job, for /health.
type JobState struct {
	// State is idle (this instance ran it last time), running, standby (another instance held
	// the lock on the last attempt), failed (the last run failed) or stopped (not started).
	State        string
	Leader       bool // this instance held the lock on the last attempt
	LastRunAt    *time.Time
	LastDuration time.Duration
	LastError    string
	Runs         int64 // runs completed on this instance
}

// Job states.
const (
	JobIdle    = "idle"
	JobRunning = "running"
	JobStandby = "standby"
	JobFailed  = "failed"
	JobStopped = "stopped"
)

// StatsRefresh counts the stats rows a run refreshed per level and the stale ones it removed
// (docs/api/admin-api.md §8).
type StatsRefresh struct {
	Partition, Queue, Namespace, Task, System, Cleanup int64
}
