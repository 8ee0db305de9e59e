package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// PushRow is one message to write. Key is the idempotency key (the message id when the
// producer gave none); Payload is JSON text.
type PushRow struct {
	Queue, Partition, Key string
	ID                    string
	Payload               []byte
	Encrypted             bool    // Payload is an encryption envelope
	ProducerSub           *string // JWT sub of the producer, nil without one
	// Uncapped writes the item whatever its queue's maxSize: a spooled push being replayed was
	// accepted when it was spooled (docs/api/operations.md §4.2, docs/api/concepts.md §10).
	Uncapped bool
}

// Push writes items in one database transaction (docs/api/data-api.md §2.2): taken keys report
// duplicate, a full queue reports failed per item. Missing queues and partitions are created
// first in their own committed step, only when the push finds some missing.
func (s *Store) Push(ctx context.Context, items []PushRow) ([]mq.PushResult, error) {
	ctx = budget.Ensure(ctx)
	c := pushColumns(items)
	var out []mq.PushResult
	// Names resolve in the caller's tenant (scope.go): the cache is keyed by it. A push that sees
	// every tenant is an internal one (tests); it resolves in the default tenant's name space.
	tn, _ := tenant.Of(ctx)
	run := func() error {
		out = out[:0]
		known := s.partitions.lookup(tn, c.pairQueues, c.pairParts) // nil: resolve the names
		args := pushArgs{Queues: c.pairQueues, Partitions: c.pairParts, PairIDs: known, PairOf: c.pairOf,
			Keys: c.keys, IDs: c.ids, Payloads: c.payloads, Encrypted: c.encrypted, Subs: c.subs, Uncapped: c.uncapped, Now: s.nowArg()}
		read := pushRows.reader()
		err := s.queryRows(ctx, sqlPush, args.args(), func(r rowScanner) error {
			p, err := read(r)
			if err != nil {
				return err
			}
			status := p.Status
			if status == "taken" {
				status = mq.StatusDuplicate
			}
			out = append(out, mq.PushResult{Status: status, MessageID: p.MID, PartitionID: p.PID, Queue: p.QName})
			return nil
		})
		switch {
		case err == nil && known == nil && len(out) == len(items):
			ids := make([]string, len(c.pairQueues))
			for i, pair := range c.pairOf {
				ids[pair-1] = out[i].PartitionID
			}
			s.partitions.remember(tn, c.pairQueues, c.pairParts, ids)
		case pgCode(err) == codeMissingPartitions && known != nil:
			s.partitions.forget(tn, c.pairQueues, c.pairParts) // one was deleted: resolve them again
		}
		return err
	}
	err := s.runCreating(ctx, c.pairQueues, c.pairParts, run)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	return out, nil
}

// codeForeignKey is PostgreSQL's foreign_key_violation.
const codeForeignKey = "23503"

// createAttempts bounds how often a write creates missing queues and partitions: a queue
// deleted while the creation step runs (admin delete) makes them missing again. Attempts back
// off from createBackoff, doubling, so an in-progress deletion can finish first.
const (
	createAttempts = 8
	createBackoff  = time.Millisecond
)

// runCreating runs a write that raises QG001 while some of its queues or partitions do not
// exist, creating them in their own committed step and trying again.
func (s *Store) runCreating(ctx context.Context, queues, partitions []string, run func() error) error {
	err := run()
	wait := createBackoff
	for i := 0; i < createAttempts && pgCode(err) == codeMissingPartitions; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		// A queue deleted during the creation step fails its foreign key; the write then finds
		// the partitions missing again and the next round creates the queue anew.
		if err = s.EnsurePartitions(ctx, queues, partitions); err == nil || pgCode(err) == codeForeignKey {
			err = run()
		}
	}
	return err
}

// EnsurePartitions creates the named queues (with default options) and partitions that do
// not exist yet, in a short committed transaction of its own.
func (s *Store) EnsurePartitions(ctx context.Context, queues, partitions []string) error {
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "SELECT qg_ensure_partitions(p_queues => $1, p_partitions => $2)", queues, partitions)
		return err
	})
}

// pushRow is a row of qg_push: an item's outcome, in the items' order.
type pushRow struct {
	I      int    `db:"i"`
	Status string `db:"status"` // queued | taken | failed
	MID    string `db:"mid"`
	PID    string `db:"pid"`
	Pos    *int64 `db:"pos"`
	QID    string `db:"qid"`
	QName  string `db:"qname"`
	PName  string `db:"pname"`
}

var pushRows = callOf[pushRow](sqlPush)

const sqlPush = `SELECT i, status, mid::text AS mid, pid::text AS pid, pos, qid::text AS qid, qname, pname
	FROM qg_push(p_queues => $1, p_partitions => $2, p_pair_ids => $3::uuid[], p_pair_of => $4, p_keys => $5,
		p_ids => $6::uuid[], p_payloads => $7, p_encrypted => $8, p_subs => $9, p_uncapped => $10, p_now => $11)`

// pushArgs are the parameters of qg_push (see sqlCall).
type pushArgs struct {
	Queues, Partitions []string // the distinct (queue, partition) pairs
	PairIDs            []string // the pairs' partition ids; nil: resolve the names
	PairOf             []int32  // per item: its pair, 1-based
	Keys, IDs          []string
	Payloads           []string
	Encrypted          []bool
	Subs               []*string
	Uncapped           []bool // per item: not subject to maxSize; nil: every item is capped
	Now                any
}

func (a pushArgs) args() []any {
	return []any{a.Queues, a.Partitions, uuidParam(a.PairIDs), a.PairOf, a.Keys, uuidParam(a.IDs), a.Payloads,
		a.Encrypted, a.Subs, a.Uncapped, a.Now}
}

// pushCols are push items as the column arrays the SQL functions take. The (queue,
// partition) names also come once per distinct pair, with each item's pair (1-based) in
// pairOf: a request of 100 items usually names one partition, and resolving it once instead
// of per item spares 100 index probes (about 4 % of the push's database time).
type pushCols struct {
	queues, parts, keys, ids, payloads []string
	encrypted                          []bool
	subs                               []*string
	uncapped                           []bool // nil unless some item is Uncapped
	pairQueues, pairParts              []string
	pairOf                             []int32
}

func pushColumns(items []PushRow) pushCols {
	n := len(items)
	c := pushCols{queues: make([]string, n), parts: make([]string, n), keys: make([]string, n),
		ids: make([]string, n), payloads: make([]string, n), encrypted: make([]bool, n), subs: make([]*string, n),
		pairOf: make([]int32, n)}
	type pair struct{ queue, partition string }
	seen := make(map[pair]int32, 4)
	for i, it := range items {
		c.queues[i], c.parts[i], c.keys[i], c.ids[i] = it.Queue, it.Partition, it.Key, it.ID
		c.payloads[i], c.encrypted[i], c.subs[i] = string(it.Payload), it.Encrypted, it.ProducerSub
		if it.Uncapped {
			if c.uncapped == nil {
				c.uncapped = make([]bool, n)
			}
			c.uncapped[i] = true
		}
		k := pair{it.Queue, it.Partition}
		j, ok := seen[k]
		if !ok {
			c.pairQueues = append(c.pairQueues, it.Queue)
			c.pairParts = append(c.pairParts, it.Partition)
			j = int32(len(c.pairQueues))
			seen[k] = j
		}
		c.pairOf[i] = j
	}
	return c
}

// NotifyQueues signals the named queues to every instance's listener (see qg_notify_queues).
func (s *Store) NotifyQueues(ctx context.Context, queues []string) error {
	tenants, names := make([]string, len(queues)), make([]string, len(queues))
	for i, q := range queues {
		tenants[i], names[i] = tenant.Split(q)
	}
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "SELECT qg_notify_queues(p_tenants => $1, p_names => $2)", tenants, names)
		return err
	})
}
