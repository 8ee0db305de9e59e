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

// ackRow is a row of qg_ack_items and qg_ack_one: an item's verdict, in the items' order; its
// fields are mq.AckResult's.
type ackRow struct {
	Success          bool    `db:"success"`
	Error            *string `db:"error"`
	Queue            *string `db:"queue_name"`
	Partition        *string `db:"partition_name"`
	LeaseReleased    bool    `db:"lease_released"`
	DLQ              bool    `db:"dlq"`
	AlreadyCommitted bool    `db:"already_committed"`
}

// ackManyRow is a row of qg_ack_many: item i's verdict (0-based over the flattened items).
type ackManyRow struct {
	I int32 `db:"i"`
	ackRow
}

var (
	ackRows     = callOf[ackRow](sqlAck)
	ackOneRows  = callOf[ackRow](sqlAckOne)
	ackManyRows = callOf[ackManyRow](sqlAckMany)
)

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
	q := ackRows
	var args []any
	if len(items) == 1 && len(required) == 0 {
		it := items[0]
		q, args = ackOneRows, ackOneArgs{PID: it.PartitionID, Key: it.TransactionID, Group: it.Group,
			Status: it.Status, Lease: it.LeaseID, Error: strPtr(it.Error), Now: s.nowArg()}.args()
	} else {
		a := ackArrays(items)
		args = ackArgs{PIDs: a.pids, Keys: a.keys, Groups: a.groups, Statuses: a.statuses, Leases: a.leases,
			Errors: a.errors, Required: required, Now: s.nowArg()}.args()
	}
	var out []mq.AckResult
	read := q.reader()
	err := s.queryRows(ctx, q.sql, args,
		func(row rowScanner) error {
			a, err := read(row)
			if err != nil {
				return err
			}
			r := mq.AckResult(a)
			r.Error = ackVerdict(r.Error)
			out = append(out, r)
			return nil
		})
	return out, err
}

const sqlAckMany = `SELECT i, success, error, queue_name, partition_name, lease_released, dlq, already_committed
	FROM qg_ack_many(p_starts => $1, p_pids => $2::uuid[], p_keys => $3, p_groups => $4, p_statuses => $5,
		p_leases => $6::uuid[], p_errors => $7, p_now => $8)`

// ackManyArgs are the parameters of qg_ack_many (see sqlCall): the requests' items flattened,
// and where each request starts (1-based).
type ackManyArgs struct {
	Starts                 []int32
	PIDs                   []*string
	Keys, Groups, Statuses []string
	Leases, Errors         []*string
	Now                    any
}

func (a ackManyArgs) args() []any {
	return []any{a.Starts, uuidParam(a.PIDs), a.Keys, a.Groups, a.Statuses, uuidParam(a.Leases), a.Errors, a.Now}
}

// AckMany applies several ack requests in one database transaction, each evaluated exactly as
// Ack would alone, in order (a request sees what the ones before it did): the broker's ack
// coalescer merges concurrent requests into one commit. out[r] are the results of reqs[r].
// An error means nothing was applied.
func (s *Store) AckMany(ctx context.Context, reqs [][]mq.AckItem) ([][]mq.AckResult, error) {
	if len(reqs) == 1 {
		r, err := s.Ack(ctx, reqs[0])
		if err != nil {
			return nil, err
		}
		return [][]mq.AckResult{r}, nil
	}
	n := 0
	starts := make([]int32, len(reqs))
	owner := make([]int32, 0, len(reqs)) // the request of each flattened item
	for r, items := range reqs {
		starts[r] = int32(n + 1)
		n += len(items)
		for range items {
			owner = append(owner, int32(r))
		}
	}
	all := make([]mq.AckItem, 0, n)
	for _, items := range reqs {
		all = append(all, items...)
	}
	a := ackArrays(all)
	args := ackManyArgs{Starts: starts, PIDs: a.pids, Keys: a.keys, Groups: a.groups, Statuses: a.statuses,
		Leases: a.leases, Errors: a.errors, Now: s.nowArg()}.args()
	out := make([][]mq.AckResult, len(reqs))
	for r, items := range reqs {
		out[r] = make([]mq.AckResult, 0, len(items))
	}
	got := 0
	read := ackManyRows.reader()
	err := s.queryRows(ctx, sqlAckMany, args, func(row rowScanner) error {
		a, err := read(row)
		if err != nil {
			return err
		}
		i, r := a.I, mq.AckResult(a.ackRow)
		if i < 0 || int(i) >= n || int(i)-int(starts[owner[i]]-1) != len(out[owner[i]]) {
			return fmt.Errorf("ack returned item %d out of order", i)
		}
		r.Error = ackVerdict(r.Error)
		out[owner[i]] = append(out[owner[i]], r)
		got++
		return nil
	})
	if err == nil && got != n {
		err = fmt.Errorf("ack returned %d results for %d items", got, n)
	}
	if err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	return out, nil
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
