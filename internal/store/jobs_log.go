package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Background-job run records (docs/api/admin-api.md §10.3; dashboard M12).

const sqlRecordJobRun = `SELECT qg_record_job_run(p_job => $1, p_started => $2, p_worker => $3, p_hostname => $4,
	p_duration_ms => $5, p_error => $6, p_now => $7)`

// recordJobRunArgs are the parameters of qg_record_job_run.
type recordJobRunArgs struct {
	Job        string
	Started    any // time.Time
	Worker     string
	Hostname   string
	DurationMs int64
	Error      any // nil for a successful run
	Now        any
}

func (a recordJobRunArgs) args() []any {
	return []any{a.Job, a.Started, a.Worker, a.Hostname, a.DurationMs, a.Error, a.Now}
}

// RecordJobRun stores one finished run and prunes the job's records older than a day.
func (s *Store) RecordJobRun(ctx context.Context, run mq.JobRun) error {
	a := recordJobRunArgs{Job: run.Job, Started: run.StartedAt, Worker: run.WorkerID, Hostname: run.Hostname,
		DurationMs: run.Duration.Milliseconds(), Error: nullIfEmpty(run.Error), Now: s.nowArg()}
	var pruned int64
	_, err := s.queryOne(ctx, sqlRecordJobRun, a.args(), &pruned)
	return wrap("record job run", err)
}

// jobSummaryRow is a row of qg_job_summaries.
type jobSummaryRow struct {
	Name           string     `db:"job"`
	Running        bool       `db:"running"`
	Leader         *string    `db:"leader"`
	LastRunAt      *time.Time `db:"last_run_at"`
	LastDurationMs *int64     `db:"last_duration_ms"`
	LastFailed     *bool      `db:"last_failed"`
	LastError      *string    `db:"last_error"`
	LastSuccessAt  *time.Time `db:"last_success_at"`
	LastFailureAt  *time.Time `db:"last_failure_at"`
	Runs           int64      `db:"runs"`
	Failures       int64      `db:"failures"`
}

// jobInstanceRow is a row of qg_job_instances: one instance's runs of a job.
type jobInstanceRow struct {
	Job       string    `db:"job"`
	WorkerID  string    `db:"worker_id"`
	Hostname  string    `db:"hostname"`
	LastRunAt time.Time `db:"last_run_at"`
	Runs      int64     `db:"runs"`
	Failures  int64     `db:"failures"`
}

var (
	jobSummaryRows  = callOf[jobSummaryRow]("SELECT * FROM qg_job_summaries(p_jobs => $1, p_now => $2)")
	jobInstanceRows = callOf[jobInstanceRow]("SELECT * FROM qg_job_instances(p_now => $1)")
)

// JobSummaries reads every job of mq.JobNames across instances, in that order.
func (s *Store) JobSummaries(ctx context.Context) ([]mq.JobSummary, error) {
	var out []mq.JobSummary
	byJob := map[string]int{}
	err := s.queryBatch(ctx,
		jobSummaryRows.call([]any{mq.JobNames, s.nowArg()}, func(r jobSummaryRow) {
			j := mq.JobSummary{Name: r.Name, Running: r.Running, Leader: r.Leader, LastRunAt: r.LastRunAt,
				LastFailed: r.LastFailed != nil && *r.LastFailed, LastError: r.LastError, LastSuccessAt: r.LastSuccessAt,
				LastFailureAt: r.LastFailureAt, Runs: r.Runs, Failures: r.Failures, Instances: []mq.JobInstance{}}
			if r.LastDurationMs != nil {
				j.LastDurationMs = *r.LastDurationMs
			}
			byJob[j.Name] = len(out)
			out = append(out, j)
		}),
		jobInstanceRows.call([]any{s.nowArg()}, func(r jobInstanceRow) {
			if n, ok := byJob[r.Job]; ok {
				out[n].Instances = append(out[n].Instances, mq.JobInstance{WorkerID: r.WorkerID, Hostname: r.Hostname,
					LastRunAt: r.LastRunAt, Runs: r.Runs, Failures: r.Failures})
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("read job runs: %w", err)
	}
	return out, nil
}

// sqlShortestRetention reads the shortest retention of any queue with retention enabled.
var sqlShortestRetention = queryOf[shortestRetentionRow]("shortest_retention")

// shortestRetentionRow is the row of shortest_retention.
type shortestRetentionRow struct {
	Seconds int64 `db:"seconds"`
}

// ShortestRetention is the shortest retentionSeconds or completedRetentionSeconds of any queue
// of any tenant with retention enabled; 0 when there is none. The retention job's schedule
// follows it (internal/maintenance).
func (s *Store) ShortestRetention(ctx context.Context) (time.Duration, error) {
	var secs int64
	err := s.queryRows(ctx, sqlShortestRetention.sql, nil, sqlShortestRetention.each(func(r shortestRetentionRow) {
		secs = r.Seconds
	}))
	return time.Duration(secs) * time.Second, wrap("shortest retention", err)
}
