package store

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/internal/mq"
)

// Ack evaluates and applies acks in one database transaction; rejected items are reported.
func (s *Store) Ack(ctx context.Context, items []mq.AckItem) ([]mq.AckResult, error) {
	out, err := s.ackItems(ctx, items, nil)
	if err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	return out, nil
}

const sqlAck = `SELECT success, error, queue_name, partition_name, lease_released, dlq, already_committed
	FROM qg_ack_items(p_pids => $1::uuid[], p_keys => $2, p_groups => $3, p_statuses => $4,
		p_leases => $5::uuid[], p_errors => $6, p_required => $7::uuid[], p_now => $8)`

// ackArgs are the parameters of qg_ack_items (see sqlCall).
type ackArgs struct {
	PIDs                   []*string
	Keys, Groups, Statuses []string
	Leases, Errors         []*string
	Required               []string // leases that must be live (transactions' requiredLeases)
	Now                    any
}

func (a ackArgs) args() []any {
	return []any{uuidParam(a.PIDs), a.Keys, a.Groups, a.Statuses, uuidParam(a.Leases), a.Errors, uuidParam(a.Required), a.Now}
}

// sqlAckOne is the single-item ack (qg_ack_one: one guarded UPDATE when the ack completes its
// pair's leased batch, qg_ack_items otherwise).
const sqlAckOne = `SELECT success, error, queue_name, partition_name, lease_released, dlq, already_committed
	FROM qg_ack_one(p_pid => $1::uuid, p_key => $2, p_group => $3, p_status => $4,
		p_lease => $5::uuid, p_error => $6, p_now => $7)`

// ackOneArgs are the parameters of qg_ack_one (see sqlCall).
type ackOneArgs struct {
	PID, Key, Group string // PID "": no partition (NULL)
	Status          string
	Lease           string // "": none
	Error           *string
	Now             any
}

func (a ackOneArgs) args() []any {
	return []any{uuidArg(a.PID), a.Key, a.Group, a.Status, uuidArg(a.Lease), a.Error, a.Now}
}

func (s *Store) ackItems(ctx context.Context, items []mq.AckItem, required []string) ([]mq.AckResult, error) {
	var sql string
	var args []any
	if len(items) == 1 && len(required) == 0 {
		it := items[0]
		sql, args = sqlAckOne, ackOneArgs{PID: it.PartitionID, Key: it.TransactionID, Group: it.Group,
			Status: it.Status, Lease: it.LeaseID, Error: strPtr(it.Error), Now: s.nowArg()}.args()
	} else {
		a := ackArrays(items)
		sql, args = sqlAck, ackArgs{PIDs: a.pids, Keys: a.keys, Groups: a.groups, Statuses: a.statuses, Leases: a.leases,
			Errors: a.errors, Required: required, Now: s.nowArg()}.args()
	}
	var out []mq.AckResult
	err := s.queryRows(ctx, sql, args,
		func(row rowScanner) error {
			var r mq.AckResult
			if err := row.Scan(&r.Success, &r.Error, &r.Queue, &r.Partition, &r.LeaseReleased, &r.DLQ, &r.AlreadyCommitted); err != nil {
				return err
			}
			r.Error = ackVerdict(r.Error)
			out = append(out, r)
			return nil
		})
	return out, err
}

// ackCols are ack items as the column arrays the SQL functions take.
type ackCols struct {
	pids, leases, errors   []*string
	keys, groups, statuses []string
}

// ackArrays turns items into the column arrays qg_ack_items takes ("" → NULL where it means none).
func ackArrays(items []mq.AckItem) ackCols {
	n := len(items)
	a := ackCols{pids: make([]*string, n), leases: make([]*string, n), errors: make([]*string, n),
		keys: make([]string, n), groups: make([]string, n), statuses: make([]string, n)}
	for i, it := range items {
		a.pids[i], a.leases[i], a.errors[i] = strPtr(it.PartitionID), strPtr(it.LeaseID), strPtr(it.Error)
		a.keys[i], a.groups[i], a.statuses[i] = it.TransactionID, it.Group, it.Status
	}
	return a
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
