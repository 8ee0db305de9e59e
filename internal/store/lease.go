package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ExtendLease pushes the expiry of a live lease to at least now+seconds on every pair that
// holds it; it returns the earliest resulting expiry and the outcome.
func (s *Store) ExtendLease(ctx context.Context, leaseID string, seconds int) (time.Time, string, error) {
	var exp *time.Time
	var state string
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, "SELECT expires_at, state FROM qg_extend_lease(p_lease_id => $1::uuid, p_seconds => $2, p_now => $3)",
			leaseID, seconds, s.nowArg()).Scan(&exp, &state)
	})
	if err != nil {
		return time.Time{}, "", fmt.Errorf("extend lease: %w", err)
	}
	if exp == nil {
		return time.Time{}, state, nil
	}
	return *exp, state, nil
}
