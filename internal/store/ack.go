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
	FROM qg_ack_items($1::uuid[], $2, $3, $4, $5::uuid[], $6, $7::uuid[], $8)`

func (s *Store) ackItems(ctx context.Context, items []mq.AckItem, required []string) ([]mq.AckResult, error) {
	a := ackArrays(items)
	var out []mq.AckResult
	err := s.queryRows(ctx, sqlAck, []any{uuidParam(a.pids), a.keys, a.groups, a.statuses, uuidParam(a.leases), a.errors, uuidParam(required), s.nowArg()},
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

type ackArgs struct {
	pids, leases, errors   []*string
	keys, groups, statuses []string
}

// ackArrays turns items into the column arrays qg_ack_items takes ("" → NULL where it means none).
func ackArrays(items []mq.AckItem) ackArgs {
	n := len(items)
	a := ackArgs{pids: make([]*string, n), leases: make([]*string, n), errors: make([]*string, n),
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
