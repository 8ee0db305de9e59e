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

// JobRun is one finished run of a background job, as recorded for GET /api/v1/system/jobs.
type JobRun struct {
	Job                string
	StartedAt          time.Time
	WorkerID, Hostname string
	Duration           time.Duration
	Error              string // "" for a successful run
}

// JobSummary is one job across every instance (docs/api/admin-api.md §10.3).
type JobSummary struct {
	Name                         string
	Running                      bool    // some instance holds the job's lock now
	Leader                       *string // worker of the latest run
	LastRunAt                    *time.Time
	LastDurationMs               int64
	LastFailed                   bool
	LastError                    *string
	LastSuccessAt, LastFailureAt *time.Time
	Runs, Failures               int64 // in the last 24 h
	Instances                    []JobInstance
}

// JobInstance is one instance's share of a job's runs in the last 24 h.
type JobInstance struct {
	WorkerID, Hostname string
	LastRunAt          time.Time
	Runs, Failures     int64
}
