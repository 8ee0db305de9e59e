package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// Moving a message to the DLQ by request (docs/api/admin-api.md §2.5; sql/functions/078_admin_move_dlq.sql).

const sqlMoveToDLQ = `SELECT consumer_group, action, reason FROM qg_move_to_dlq(p_pid => $1::uuid, p_key => $2,
	p_group => $3, p_reason => $4, p_now => $5)`

// groupActionRow is a row of qg_move_to_dlq: one group's outcome.
type groupActionRow struct {
	Group  string  `db:"consumer_group"`
	Action string  `db:"action"`
	Reason *string `db:"reason"`
}

var moveToDLQRows = callOf[groupActionRow](sqlMoveToDLQ)

// moveToDLQArgs are the parameters of qg_move_to_dlq (see sqlCall).
type moveToDLQArgs struct {
	Pid, Key string
	Group    any // nil: every consumer of the partition
	Reason   string
	Now      any
}

func (a moveToDLQArgs) args() []any { return []any{a.Pid, a.Key, a.Group, a.Reason, a.Now} }

// MoveToDLQ dead-letters one message for group (every consumer of its partition when group is
// empty) and returns each group's outcome; found is false when there is no such message.
// partitionID must be a canonical UUID.
func (s *Store) MoveToDLQ(ctx context.Context, partitionID, transactionID, group, reason string) (out []mq.GroupAction, found bool, err error) {
	args := moveToDLQArgs{Pid: partitionID, Key: transactionID, Group: nullIfEmpty(group), Reason: reason, Now: s.nowArg()}
	out, err = collect(ctx, s, moveToDLQRows, args.args(), func(r groupActionRow) mq.GroupAction {
		return mq.GroupAction{Group: r.Group, Action: r.Action, Reason: deref(r.Reason)}
	})
	if err != nil {
		return nil, false, fmt.Errorf("move to dlq: %w", err)
	}
	return out, len(out) > 0, nil
}
