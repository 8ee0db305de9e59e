package httpapi

import (
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// GET /api/v1/system/jobs (docs/api/admin-api.md §10.3; dashboard M12): the background jobs
// across every instance, from the run records each writes. Admin level, because the error
// texts may name database hosts and users (docs/api/operations.md §9.6).

type jobInstanceJSON struct {
	WorkerID  string `json:"workerId"`
	Hostname  string `json:"hostname"`
	LastRunAt msTime `json:"lastRunAt"`
	Runs      int64  `json:"runs"`
	Failures  int64  `json:"failures"`
}

type jobSummaryJSON struct {
	Name           string            `json:"name"`
	IntervalMs     int64             `json:"intervalMs"`
	Running        bool              `json:"running"`
	Leader         *string           `json:"leader"`
	LastRunAt      msTime            `json:"lastRunAt"`
	LastDurationMs *int64            `json:"lastDurationMs"`
	LastOutcome    *string           `json:"lastOutcome"`
	LastError      *string           `json:"lastError"`
	LastSuccessAt  msTime            `json:"lastSuccessAt"`
	LastFailureAt  msTime            `json:"lastFailureAt"`
	NextRunAt      msTime            `json:"nextRunAt"`
	Runs           int64             `json:"runs"`
	Failures       int64             `json:"failures"`
	Instances      []jobInstanceJSON `json:"instances"`
}

func (s *Server) registerSystemJobs(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/system/jobs", LevelAdmin, s.systemJobs)
}

func (s *Server) systemJobs(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.read.JobSummaries(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var intervals map[string]time.Duration
	if s.cfg.Jobs != nil {
		intervals = s.cfg.Jobs.Intervals()
	}
	out := mapRows(jobs, func(j mq.JobSummary) jobSummaryJSON {
		o := jobSummaryJSON{Name: j.Name, IntervalMs: intervals[j.Name].Milliseconds(), Running: j.Running,
			Leader: j.Leader, LastRunAt: msOpt(j.LastRunAt), LastError: j.LastError,
			LastSuccessAt: msOpt(j.LastSuccessAt), LastFailureAt: msOpt(j.LastFailureAt), Runs: j.Runs,
			Failures: j.Failures, Instances: mapRows(j.Instances, func(i mq.JobInstance) jobInstanceJSON {
				return jobInstanceJSON{WorkerID: i.WorkerID, Hostname: i.Hostname, LastRunAt: msTime(i.LastRunAt),
					Runs: i.Runs, Failures: i.Failures}
			})}
		if j.LastRunAt != nil {
			d, outcome := j.LastDurationMs, "ok"
			if j.LastFailed {
				outcome = "failed"
			}
			o.LastDurationMs, o.LastOutcome = &d, &outcome
			// The next tick is due one interval after the latest run, on whichever instance
			// takes it; unknown when the job is not scheduled on this instance.
			if every := intervals[j.Name]; every > 0 {
				o.NextRunAt = msTime(j.LastRunAt.Add(every))
			}
		}
		return o
	})
	writeJSON(w, http.StatusOK, struct {
		Jobs      []jobSummaryJSON `json:"jobs"`
		Timestamp msTime           `json:"timestamp"`
	}{out, msTime(s.read.Now())})
}
