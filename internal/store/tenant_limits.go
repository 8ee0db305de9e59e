package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/mq"
)

// Limits per tenant (docs/api/concepts.md §14): the rows of tenant_limits (migration 0021).
// The queue and stored-message limits are enforced by the SQL of the writes themselves
// (sql/functions/130_tenant_limits.sql), which raises codeTenantLimit; the push rate is the
// broker's, per instance, from the rows TenantLimits reads.

// codeTenantLimit is raised by a write that would pass its tenant's limit; DETAIL is a JSON
// array [kind, limit].
const codeTenantLimit = "QG020"

// limitRetry is the Retry-After of the stored limits: room is made by consumers or an
// operator, not by time, so it only paces the retries.
var limitRetry = map[string]time.Duration{mq.LimitQueues: 60 * time.Second, mq.LimitMessages: 5 * time.Second}

// limitError turns a QG020 error into the refusal it reports.
func limitError(pgErr *pgconn.PgError) *mq.LimitError {
	var d []string
	_ = json.Unmarshal([]byte(pgErr.Detail), &d) // a malformed DETAIL names no value
	e := &mq.LimitError{Limit: mq.LimitMessages}
	if len(d) == 2 {
		e.Limit = d[0]
		e.Value, _ = strconv.ParseInt(d[1], 10, 64)
	}
	e.RetryAfter = limitRetry[e.Limit]
	return e
}

const sqlTenantLimits = `SELECT tenant, max_queues::bigint AS max_queues, max_messages, push_rate::bigint AS push_rate
	FROM tenant_limits ORDER BY tenant`

const sqlSetTenantLimits = `SELECT tenant, max_queues::bigint AS max_queues, max_messages, push_rate::bigint AS push_rate
	FROM qg_set_tenant_limits(p_tenant => $1, p_max_queues => $2, p_max_messages => $3, p_push_rate => $4, p_by => $5)`

// tenantLimitsRow is a row of both statements above, read by column name.
type tenantLimitsRow struct {
	Tenant      string `db:"tenant"`
	MaxQueues   *int64 `db:"max_queues"`
	MaxMessages *int64 `db:"max_messages"`
	PushRate    *int64 `db:"push_rate"`
}

func readLimits(rows pgx.Rows, err error) (map[string]mq.TenantLimits, error) {
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[tenantLimitsRow])
	if err != nil {
		return nil, err
	}
	out := make(map[string]mq.TenantLimits, len(list))
	for _, r := range list {
		out[r.Tenant] = mq.TenantLimits{MaxQueues: r.MaxQueues, MaxMessages: r.MaxMessages, PushRate: r.PushRate}
	}
	return out, nil
}

// TenantLimits reads every tenant's limits, by tenant; a tenant not in the map has none.
func (s *Store) TenantLimits(ctx context.Context) (map[string]mq.TenantLimits, error) {
	var out map[string]mq.TenantLimits
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) (err error) {
		out, err = readLimits(c.Query(ctx, sqlTenantLimits))
		return err
	})
	return out, err
}

// SetTenantLimits stores a tenant's limits (all nil: removes them); by is the token's sub, nil
// without authentication. They hold for the next write of every instance.
func (s *Store) SetTenantLimits(ctx context.Context, tenant string, l mq.TenantLimits, by *string) error {
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := readLimits(c.Query(ctx, sqlSetTenantLimits, tenant, l.MaxQueues, l.MaxMessages, l.PushRate, by))
		return err
	})
}
