package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/queen-go/queen/internal/mq"
)

// ListMessages returns a page of stored messages, newest first.
func (s *Store) ListMessages(ctx context.Context, f mq.MessageFilter) ([]mq.ListedMessage, error) {
	args := []any{nullIfEmpty(f.Queue), nullIfEmpty(f.Partition), nullIfEmpty(f.Namespace), nullIfEmpty(f.Task),
		nullIfEmpty(f.Status), f.From, f.To, f.Page.Limit, f.Page.Offset, s.nowArg()}
	out, err := queryAll(ctx, s, "SELECT * FROM qg_list_messages($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", args,
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

// MessageDetail returns one message; found is false when there is no such message.
// partitionID must be a canonical UUID.
func (s *Store) MessageDetail(ctx context.Context, partitionID, transactionID string) (d mq.MessageDetail, found bool, err error) {
	args := []any{partitionID, transactionID, s.nowArg()}
	err = s.queryBatch(ctx,
		batchQuery{"SELECT * FROM qg_message_detail($1::uuid, $2, $3)", args, func(r rowScanner) error {
			found = true
			var payload *string
			err := r.Scan(&d.ID, &d.TransactionID, &d.PartitionID, &d.Queue, &d.Partition, &d.Namespace, &d.Task,
				&d.Status, &payload, &d.Encrypted, &d.TraceID, &d.ProducerSub, &d.CreatedAt, &d.ErrorMessage,
				&d.RetryCount, &d.LeaseExpiresAt, &d.LeaseTime, &d.RetryLimit, &d.RetryDelay, &d.TTL, &d.Priority)
			d.Payload = jsonText(payload)
			return err
		}},
		batchQuery{"SELECT * FROM qg_message_consumers($1::uuid, $2, $3)", args, func(r rowScanner) error {
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
	if _, err = s.queryOne(ctx, "SELECT qg_delete_message($1::uuid, $2)", []any{partitionID, transactionID}, &found); err != nil {
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

// ListDLQ returns a page of DLQ entries, newest failedAt first, and how many match in all.
func (s *Store) ListDLQ(ctx context.Context, f mq.DLQFilter) (entries []mq.DLQEntry, total int64, err error) {
	match := []any{nullIfEmpty(f.Queue), nullIfEmpty(f.Group), nullIfEmpty(f.Partition), f.From, f.To}
	err = s.queryBatch(ctx,
		batchQuery{"SELECT count(*) FROM qg_dlq_matching($1, $2, $3, $4, $5)", match, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_list_dlq($1, $2, $3, $4, $5, $6, $7)", slices.Concat(match, []any{f.Page.Limit, f.Page.Offset}),
			func(r rowScanner) error {
				var e mq.DLQEntry
				var payload *string
				if err := r.Scan(&e.MessageID, &e.TransactionID, &e.PartitionID, &e.Queue, &e.Partition, &e.Group,
					&e.ErrorMessage, &e.RetryCount, &payload, &e.Encrypted, &e.TraceID, &e.ProducerSub, &e.CreatedAt,
					&e.FailedAt); err != nil {
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
