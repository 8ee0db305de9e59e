package store

import (
	"context"
	"fmt"

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

// JobSummaries reads every job of mq.JobNames across instances, in that order.
func (s *Store) JobSummaries(ctx context.Context) ([]mq.JobSummary, error) {
	var out []mq.JobSummary
	byJob := map[string]int{}
	err := s.queryBatch(ctx,
		batchQuery{"SELECT * FROM qg_job_summaries(p_jobs => $1, p_now => $2)", []any{mq.JobNames, s.nowArg()},
			func(r rowScanner) error {
				var j mq.JobSummary
				var failed *bool
				var dur *int64
				if err := r.Scan(&j.Name, &j.Running, &j.Leader, &j.LastRunAt, &dur, &failed, &j.LastError,
					&j.LastSuccessAt, &j.LastFailureAt, &j.Runs, &j.Failures); err != nil {
					return err
				}
				if dur != nil {
					j.LastDurationMs = *dur
				}
				j.LastFailed = failed != nil && *failed
				j.Instances = []mq.JobInstance{}
				byJob[j.Name] = len(out)
				out = append(out, j)
				return nil
			}},
		batchQuery{"SELECT * FROM qg_job_instances(p_now => $1)", []any{s.nowArg()}, func(r rowScanner) error {
			var job string
			var i mq.JobInstance
			if err := r.Scan(&job, &i.WorkerID, &i.Hostname, &i.LastRunAt, &i.Runs, &i.Failures); err != nil {
				return err
			}
			if n, ok := byJob[job]; ok {
				out[n].Instances = append(out[n].Instances, i)
			}
			return nil
		}})
	if err != nil {
		return nil, fmt.Errorf("read job runs: %w", err)
	}
	return out, nil
}
