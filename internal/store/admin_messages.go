package store

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// ListMessages returns a page of stored messages, newest first.
func (s *Store) ListMessages(ctx context.Context, f mq.MessageFilter) ([]mq.ListedMessage, error) {
	args := listMessagesArgs{Queue: nullIfEmpty(f.Queue), Partition: nullIfEmpty(f.Partition), Namespace: nullIfEmpty(f.Namespace),
		Task: nullIfEmpty(f.Task), Status: nullIfEmpty(f.Status), From: f.From, To: f.To, Limit: f.Page.Limit,
		Offset: f.Page.Offset, Now: s.nowArg(), Key: nullIfEmpty(f.TransactionID), Trace: nullIfEmpty(f.TraceID)}
	out, err := queryAll(ctx, s, sqlListMessages, args.args(),
		func(r rowScanner, m *mq.ListedMessage) error {
			return r.Scan(&m.ID, &m.TransactionID, &m.PartitionID, &m.Queue, &m.Partition, &m.Namespace, &m.Task,
				&m.Status, &m.QueueStatus, &m.ConsumedBy, &m.Groups, &m.TraceID, &m.ProducerSub, &m.Priority,
				&m.CreatedAt, &m.LeaseExpiresAt, &m.HasQueueMode, &m.BusGroups)
		})
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return out, nil
}

const sqlListMessages = `SELECT * FROM qg_list_messages(p_queue => $1, p_partition => $2, p_namespace => $3,
	p_task => $4, p_status => $5, p_from => $6, p_to => $7, p_limit => $8, p_offset => $9, p_now => $10,
	p_key => $11, p_trace => $12::uuid)`

// listMessagesArgs are the parameters of qg_list_messages (see sqlCall).
type listMessagesArgs struct {
	Queue, Partition, Namespace, Task, Status any // filters, nil: any
	From, To                                  *time.Time
	Limit, Offset                             int
	Now                                       any
	Key, Trace                                any // exact transactionId and traceId, nil: any
}

func (a listMessagesArgs) args() []any {
	return []any{a.Queue, a.Partition, a.Namespace, a.Task, a.Status, a.From, a.To, a.Limit, a.Offset, a.Now,
		a.Key, a.Trace}
}

// MessageDetail returns one message; found is false when there is no such message.
// partitionID must be a canonical UUID.
func (s *Store) MessageDetail(ctx context.Context, partitionID, transactionID string) (d mq.MessageDetail, found bool, err error) {
	args := []any{partitionID, transactionID, s.nowArg()}
	err = s.queryBatch(ctx,
		batchQuery{"SELECT * FROM qg_message_detail(p_pid => $1::uuid, p_key => $2, p_now => $3)", args, func(r rowScanner) error {
			found = true
			var payload *string
			err := r.Scan(&d.ID, &d.TransactionID, &d.PartitionID, &d.Queue, &d.Partition, &d.Namespace, &d.Task,
				&d.Status, &payload, &d.Encrypted, &d.TraceID, &d.ProducerSub, &d.CreatedAt, &d.ErrorMessage,
				&d.RetryCount, &d.LeaseExpiresAt, &d.LeaseTime, &d.RetryLimit, &d.RetryDelay, &d.TTL, &d.Priority)
			d.Payload = jsonText(payload)
			return err
		}},
		batchQuery{"SELECT * FROM qg_message_consumers(p_pid => $1::uuid, p_key => $2, p_now => $3)", args, func(r rowScanner) error {
			var c mq.MessageConsumer
			if err := r.Scan(&c.Group, &c.Consumed, &c.LeaseExpiresAt); err != nil {
				return err
			}
			d.Consumers = append(d.Consumers, c)
			return nil
		}})
	if err != nil {
		return d, false, fmt.Errorf("read message: %w", err)
	}
	return d, found, nil
}

// DeleteMessage removes a message, its trace records and DLQ entries, keeping its key taken
// until its dedup window ends; found is false when there is no such message. partitionID must
// be a canonical UUID.
func (s *Store) DeleteMessage(ctx context.Context, partitionID, transactionID string) (found bool, err error) {
	if _, err = s.queryOne(ctx, "SELECT qg_delete_message(p_pid => $1::uuid, p_key => $2)", []any{partitionID, transactionID}, &found); err != nil {
		return false, fmt.Errorf("delete message: %w", err)
	}
	return found, nil
}

// jsonText turns a nullable JSON text column into bytes; SQL NULL (never stored by pushes, but
// possible in copies) reads as the JSON null.
func jsonText(s *string) []byte {
	if s == nil {
		return []byte("null")
	}
	return []byte(*s)
}

const (
	sqlDLQCount = `SELECT count(*)
		FROM qg_dlq_matching(p_queue => $1, p_group => $2, p_partition => $3, p_error => $4, p_from => $5, p_to => $6)`
	sqlListDLQ = `SELECT * FROM qg_list_dlq(p_queue => $1, p_group => $2, p_partition => $3, p_error => $4, p_from => $5,
		p_to => $6, p_limit => $7, p_offset => $8)`
)

// dlqMatchArgs are the parameters of qg_dlq_matching, and the first ones of qg_list_dlq (see
// sqlCall).
type dlqMatchArgs struct {
	Queue, Group, Partition, Error any // filters, nil: any
	From, To                       *time.Time
}

func (a dlqMatchArgs) args() []any {
	return []any{a.Queue, a.Group, a.Partition, a.Error, a.From, a.To}
}

// dlqMatch binds a DLQ filter's selection.
func dlqMatch(f mq.DLQFilter) dlqMatchArgs {
	return dlqMatchArgs{Queue: nullIfEmpty(f.Queue), Group: nullIfEmpty(f.Group), Partition: nullIfEmpty(f.Partition),
		Error: nullIfEmpty(f.Error), From: f.From, To: f.To}
}

// listDLQArgs are the parameters of qg_list_dlq.
type listDLQArgs struct {
	dlqMatchArgs
	Limit, Offset int
}

func (a listDLQArgs) args() []any { return append(a.dlqMatchArgs.args(), a.Limit, a.Offset) }

// ListDLQ returns a page of DLQ entries, newest failedAt first, and how many match in all.
func (s *Store) ListDLQ(ctx context.Context, f mq.DLQFilter) (entries []mq.DLQEntry, total int64, err error) {
	match := dlqMatch(f)
	err = s.queryBatch(ctx,
		batchQuery{sqlDLQCount, match.args(), scanInto(&total)},
		batchQuery{sqlListDLQ, listDLQArgs{dlqMatchArgs: match, Limit: f.Page.Limit, Offset: f.Page.Offset}.args(),
			func(r rowScanner) error {
				var e mq.DLQEntry
				var payload *string
				if err := r.Scan(&e.DLQID, &e.MessageID, &e.TransactionID, &e.PartitionID, &e.Queue, &e.Partition,
					&e.Group, &e.ErrorMessage, &e.RetryCount, &payload, &e.Encrypted, &e.TraceID, &e.ProducerSub,
					&e.CreatedAt, &e.FailedAt, &e.MessageStored); err != nil {
					return err
				}
				e.Payload = jsonText(payload)
				entries = append(entries, e)
				return nil
			}})
	if err != nil {
		return nil, 0, fmt.Errorf("list dlq: %w", err)
	}
	return entries, total, nil
}
