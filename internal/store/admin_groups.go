package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

const (
	sqlConsumerGroups = `SELECT * FROM qg_consumer_groups(p_queue => $1, p_group => $2, p_search => $3, p_state => $4,
		p_sort => $5, p_desc => $6, p_limit => $7, p_offset => $8, p_now => $9)`
	sqlLaggingPairs = `SELECT * FROM qg_lagging_pairs(p_min_lag => $1, p_queue => $2, p_group => $3, p_sort => $4,
		p_desc => $5, p_limit => $6, p_offset => $7, p_now => $8)`
)

// groupSummaryRow is a row of qg_consumer_groups; its fields are mq.GroupSummary's.
type groupSummaryRow struct {
	Group                 string     `db:"consumer_group"`
	Queue                 string     `db:"queue_name"`
	Members               int64      `db:"members"`
	PartitionsWithLag     int64      `db:"partitions_with_lag"`
	TotalLag              int64      `db:"total_lag"`
	MaxTimeLag            int64      `db:"max_time_lag"`
	EverConsumed          bool       `db:"ever_consumed"`
	State                 string     `db:"state"`
	SubscriptionMode      *string    `db:"subscription_mode"`
	SubscriptionTimestamp *time.Time `db:"subscription_timestamp"`
	SubscriptionCreatedAt *time.Time `db:"subscription_created_at"`
}

// laggingPairRow is a row of qg_lagging_pairs.
type laggingPairRow struct {
	Group            string     `db:"consumer_group"`
	Queue            string     `db:"queue_name"`
	Partition        string     `db:"partition_name"`
	PartitionID      string     `db:"partition_id"`
	LeaseID          *string    `db:"lease_id"`
	OffsetLag        int64      `db:"offset_lag"`
	TimeLag          int64      `db:"time_lag"`
	OldestUnconsumed *time.Time `db:"oldest_at"`
	LastConsumed     *time.Time `db:"last_consumed_at"`
}

// groupPairRow is a row of qg_consumer_group_detail: one cursor of the group.
type groupPairRow struct {
	Queue         string     `db:"queue_name"`
	Partition     string     `db:"partition_name"`
	LeaseID       *string    `db:"lease_id"`
	LastConsumed  *time.Time `db:"last_consumed_at"`
	TotalConsumed int64      `db:"total_consumed"`
	OffsetLag     int64      `db:"offset_lag"`
	TimeLag       int64      `db:"time_lag"`
}

var (
	groupSummaryRows = callOf[groupSummaryRow](sqlConsumerGroups)
	laggingPairRows  = callOf[laggingPairRow](sqlLaggingPairs)
	groupPairRows    = callOf[groupPairRow](`SELECT * FROM qg_consumer_group_detail(p_group => $1, p_queue => $2, p_now => $3) d
		ORDER BY d.queue_name, d.partition_name LIMIT $4 OFFSET $5`)
)

// consumerGroupsArgs are the parameters of qg_consumer_groups.
type consumerGroupsArgs struct {
	Queue, Group, Search, State any // filters, nil: any
	Sort                        string
	Desc                        bool
	Limit, Offset               int
	Now                         any
}

func (a consumerGroupsArgs) args() []any {
	return []any{a.Queue, a.Group, a.Search, a.State, a.Sort, a.Desc, a.Limit, a.Offset, a.Now}
}

// laggingPairsArgs are the parameters of qg_lagging_pairs.
type laggingPairsArgs struct {
	MinLag        int64
	Queue, Group  any // filters, nil: any
	Sort          string
	Desc          bool
	Limit, Offset int
	Now           any
}

func (a laggingPairsArgs) args() []any {
	return []any{a.MinLag, a.Queue, a.Group, a.Sort, a.Desc, a.Limit, a.Offset, a.Now}
}

// ConsumerGroups lists one page of the (group, queue) pairs known from cursors or
// registrations, filtered and sorted in the database, so the answer stays bounded however
// many pairs exist (docs/api/admin-api.md, Listing parameters).
func (s *Store) ConsumerGroups(ctx context.Context, f mq.GroupFilter) ([]mq.GroupSummary, error) {
	a := consumerGroupsArgs{Queue: nullIfEmpty(f.Queue), Group: nullIfEmpty(f.Group), Search: nullIfEmpty(f.Search),
		State: nullIfEmpty(f.State), Sort: f.Sort, Desc: f.Desc, Limit: f.Page.Limit, Offset: f.Page.Offset, Now: s.nowArg()}
	out, err := collect(ctx, s, groupSummaryRows, a.args(),
		func(r groupSummaryRow) mq.GroupSummary { return mq.GroupSummary(r) })
	if err != nil {
		return nil, fmt.Errorf("list consumer groups: %w", err)
	}
	return out, nil
}

// LaggingPairs lists one page of the pairs whose time lag is at least f.MinLag seconds, in
// f's order (ties by queue, partition, group).
func (s *Store) LaggingPairs(ctx context.Context, f mq.LagFilter) ([]mq.PairLag, error) {
	a := laggingPairsArgs{MinLag: f.MinLag, Queue: nullIfEmpty(f.Queue), Group: nullIfEmpty(f.Group), Sort: f.Sort,
		Desc: f.Desc, Limit: f.Page.Limit, Offset: f.Page.Offset, Now: s.nowArg()}
	out, err := collect(ctx, s, laggingPairRows, a.args(), func(r laggingPairRow) mq.PairLag {
		return mq.PairLag{Group: r.Group, Queue: r.Queue, Partition: r.Partition, PartitionID: r.PartitionID,
			LeaseID: r.LeaseID, OffsetLag: r.OffsetLag, TimeLag: r.TimeLag, OldestUnconsumed: r.OldestUnconsumed,
			LastConsumed: r.LastConsumed}
	})
	if err != nil {
		return nil, fmt.Errorf("list lagging consumers: %w", err)
	}
	return out, nil
}

// ConsumerGroupPairs lists one page of a group's cursors on every queue (or on queue), by
// queue and partition name; none on the first page means the group is unknown there.
func (s *Store) ConsumerGroupPairs(ctx context.Context, group, queue string, pg mq.Page) ([]mq.PairLag, error) {
	out, err := collect(ctx, s, groupPairRows, []any{group, nullIfEmpty(queue), s.nowArg(), pg.Limit, pg.Offset},
		func(r groupPairRow) mq.PairLag {
			return mq.PairLag{Group: group, Queue: r.Queue, Partition: r.Partition, LeaseID: r.LeaseID,
				LastConsumed: r.LastConsumed, TotalConsumed: r.TotalConsumed, OffsetLag: r.OffsetLag, TimeLag: r.TimeLag}
		})
	if err != nil {
		return nil, fmt.Errorf("read consumer group %q: %w", group, err)
	}
	return out, nil
}

// DeleteConsumerGroup removes a group's cursors and leases on every queue (queue "") or one
// queue, and with metadata its subscriptions. It returns the cursors removed and the queues
// touched (to wake their parked pops).
func (s *Store) DeleteConsumerGroup(ctx context.Context, group, queue string, metadata bool) (deleted int, queues []string, err error) {
	_, err = s.queryOne(ctx, "SELECT * FROM qg_delete_consumer_group(p_group => $1, p_queue => $2, p_metadata => $3)",
		[]any{group, nullIfEmpty(queue), metadata}, &deleted, &queues)
	if err != nil {
		return 0, nil, fmt.Errorf("delete consumer group %q: %w", group, err)
	}
	return deleted, queues, nil
}

// SetSubscriptionTimestamp rewrites a group's subscription timestamp on every queue it is
// registered on; it returns the registrations changed and their queues.
func (s *Store) SetSubscriptionTimestamp(ctx context.Context, group string, ts time.Time) (updated int, queues []string, err error) {
	_, err = s.queryOne(ctx, "SELECT * FROM qg_set_subscription_timestamp(p_group => $1, p_ts => $2)", []any{group, ts}, &updated, &queues)
	if err != nil {
		return 0, nil, fmt.Errorf("update subscription of %q: %w", group, err)
	}
	return updated, queues, nil
}

// SeekQueue moves a group's cursor on every partition of a queue: to the end when ts is nil,
// else before the first message created at or after ts. found is false for an unknown queue.
func (s *Store) SeekQueue(ctx context.Context, group, queue string, ts *time.Time) (updated int, found bool, err error) {
	var n *int
	if _, err = s.queryOne(ctx, "SELECT qg_seek_queue(p_group => $1, p_queue => $2, p_ts => $3)", []any{group, queue, ts}, &n); err != nil {
		return 0, false, fmt.Errorf("seek %q on %q: %w", group, queue, err)
	}
	if n == nil {
		return 0, false, nil
	}
	return *n, true, nil
}

// SeekPartition moves a group's cursor to the end of one partition. found is false for an
// unknown queue or partition; movedTo is the last stored message, nil when there is none.
func (s *Store) SeekPartition(ctx context.Context, group, queue, partition string) (movedTo *string, found bool, err error) {
	_, err = s.queryOne(ctx, "SELECT * FROM qg_seek_partition(p_group => $1, p_queue => $2, p_partition => $3)", []any{group, queue, partition}, &found, &movedTo)
	if err != nil {
		return nil, false, fmt.Errorf("seek %q on %q/%q: %w", group, queue, partition, err)
	}
	return movedTo, found, nil
}
