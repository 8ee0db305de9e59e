package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// Deleting DLQ entries (docs/api/admin-api.md §3.3).

// DeleteDLQEntry removes one entry; existed is false when there was none. id must be a
// canonical UUID.
func (s *Store) DeleteDLQEntry(ctx context.Context, id string) (existed bool, err error) {
	if _, err = s.queryOne(ctx, "SELECT qg_dlq_delete(p_id => $1::uuid)", []any{id}, &existed); err != nil {
		return false, fmt.Errorf("delete dlq entry: %w", err)
	}
	return existed, nil
}

// DeleteDLQEntries removes the entries with the given ids (canonical UUIDs) and returns the
// ids it removed.
func (s *Store) DeleteDLQEntries(ctx context.Context, ids []string) ([]string, error) {
	out, err := queryAll(ctx, s, "SELECT qg_dlq_delete_ids(p_ids => $1::uuid[])", []any{ids},
		func(r rowScanner, id *string) error { return r.Scan(id) })
	if err != nil {
		return nil, fmt.Errorf("delete dlq entries: %w", err)
	}
	return out, nil
}

const sqlDLQDeleteMatching = `SELECT deleted, remaining FROM qg_dlq_delete_matching(p_queue => $1, p_group => $2,
	p_partition => $3, p_error => $4, p_from => $5, p_to => $6, p_limit => $7)`

// dlqDeleteMatchingArgs are the parameters of qg_dlq_delete_matching (see sqlCall).
type dlqDeleteMatchingArgs struct {
	dlqMatchArgs
	Limit int
}

func (a dlqDeleteMatchingArgs) args() []any { return append(a.dlqMatchArgs.args(), a.Limit) }

// DeleteDLQMatching removes up to limit entries matching f, oldest failedAt first, and counts
// the matching entries left.
func (s *Store) DeleteDLQMatching(ctx context.Context, f mq.DLQFilter, limit int) (deleted, remaining int64, err error) {
	args := dlqDeleteMatchingArgs{dlqMatchArgs: dlqMatch(f), Limit: limit}
	if _, err = s.queryOne(ctx, sqlDLQDeleteMatching, args.args(), &deleted, &remaining); err != nil {
		return 0, 0, fmt.Errorf("delete dlq entries: %w", err)
	}
	return deleted, remaining, nil
}
