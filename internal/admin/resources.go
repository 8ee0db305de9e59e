package admin

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
)

// Admin reads and writes of queues (docs/api/admin-api.md §1). Counters are computed live by the store.

// ListQueues lists one page of the queues with their counters, filtered and sorted as f says
// (docs/api/admin-api.md "Listing parameters"; GET /api/v1/resources/queues and /status/queues).
func (a *Admin) ListQueues(ctx context.Context, f mq.QueueListFilter) (mq.QueueList, error) {
	f.Page = bounded(f.Page)
	return a.store.ListQueues(ctx, f)
}

// LabelSummaries groups the queues by task or by namespace: one page of the labels matching f.
func (a *Admin) LabelSummaries(ctx context.Context, f mq.LabelFilter) (mq.LabelList, error) {
	f.Page = bounded(f.Page)
	return a.store.LabelSummaries(ctx, f)
}

// bounded is the read side's own guard on a page: never more than mq.MaxListRows rows, whatever
// the caller asked (docs/api/operations.md §9.5). Parsing and clamping the request's limit and
// offset is the HTTP layer's job; this only keeps a bug there from unbounding an answer.
func bounded(p mq.Page) mq.Page {
	if p.Limit < 0 || p.Limit > mq.MaxListRows {
		p.Limit = mq.MaxListRows
	}
	p.Offset = max(p.Offset, 0)
	return p
}

// DeleteQueue removes a queue with everything of it; existed is false when there was none.
// The queue's remembered encryption flag is dropped, since a queue of the same name created
// later starts unencrypted.
func (a *Admin) DeleteQueue(ctx context.Context, name string) (existed bool, err error) {
	existed, err = a.store.DeleteQueue(ctx, name)
	a.data.ForgetQueue(ctx, name)
	return existed, err
}
