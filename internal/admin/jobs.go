package admin

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// JobSummaries reads every background job's runs across instances, from the run records each
// instance writes (docs/api/admin-api.md §10.3; dashboard M12).
func (a *Admin) JobSummaries(ctx context.Context) ([]mq.JobSummary, error) {
	return a.store.JobSummaries(ctx)
}
