package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// MessageFilter selects the messages of the admin listing (admin-api.md §2.1). Empty strings
// match anything; From and To are inclusive bounds on createdAt, by default the last hour.
type MessageFilter struct {
	Queue, Partition, Namespace, Task string
	Status                            string // "", pending, processing, completed or dead_letter
	From, To                          *time.Time
	Page                              Page
}

// StoredMessage is what the admin routes show of a stored message.
type StoredMessage struct {
	ID, TransactionID, PartitionID string
	Queue, Partition               string
	Namespace, Task                string
	Status                         string  // pending | processing | completed | dead_letter
	TraceID, ProducerSub           *string // nil when none
	CreatedAt                      time.Time
	LeaseExpiresAt                 *time.Time // a live lease whose batch holds it
}

// ListedMessage is one row of the message listing.
type ListedMessage struct {
	StoredMessage
	QueueStatus        *string // the state for queue mode; nil when it is not a consumer
	ConsumedBy, Groups int64   // named groups that passed it / that consume its partition
	Priority           int
	HasQueueMode       bool  // over the queues of the whole page
	BusGroups          int64 // distinct named groups over the queues of the whole page
}

// MessageDetail is one message with its payload (as stored), last DLQ entry and queue options.
type MessageDetail struct {
	StoredMessage
	Payload      []byte
	Encrypted    bool
	ErrorMessage *string
	RetryCount   int
	LeaseTime    int
	RetryLimit   int
	RetryDelay   int
	TTL          int
	Priority     int
	Consumers    []MessageConsumer
}

// MessageConsumer is one consumer of a message's partition.
type MessageConsumer struct {
	Group          string
	Consumed       bool
	LeaseExpiresAt *time.Time
}

// ListMessages returns a page of stored messages, newest first.
func (s *Store) ListMessages(ctx context.Context, f MessageFilter) ([]ListedMessage, error) {
	args := []any{nullIfEmpty(f.Queue), nullIfEmpty(f.Partition), nullIfEmpty(f.Namespace), nullIfEmpty(f.Task),
		nullIfEmpty(f.Status), f.From, f.To, f.Page.Limit, f.Page.Offset, s.nowArg()}
	out, err := queryAll(ctx, s, "SELECT * FROM qg_list_messages($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", args,
		func(r rowScanner, m *ListedMessage) error {
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
func (s *Store) MessageDetail(ctx context.Context, partitionID, transactionID string) (d MessageDetail, found bool, err error) {
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
			var c MessageConsumer
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

// DLQFilter selects DLQ entries (admin-api.md §3). Empty strings and nil times match anything.
type DLQFilter struct {
	Queue, Group, Partition string
	From, To                *time.Time
	Page                    Page
}

// DLQEntry is one dead-lettered copy of a message.
type DLQEntry struct {
	MessageID, TransactionID, PartitionID string
	Queue, Partition, Group               string
	ErrorMessage                          string
	RetryCount                            int
	Payload                               []byte // as stored
	Encrypted                             bool
	TraceID, ProducerSub                  *string
	CreatedAt, FailedAt                   time.Time
}

// ListDLQ returns a page of DLQ entries, newest failedAt first, and how many match in all.
func (s *Store) ListDLQ(ctx context.Context, f DLQFilter) (entries []DLQEntry, total int64, err error) {
	match := []any{nullIfEmpty(f.Queue), nullIfEmpty(f.Group), nullIfEmpty(f.Partition), f.From, f.To}
	err = s.queryBatch(ctx,
		batchQuery{"SELECT count(*) FROM qg_dlq_matching($1, $2, $3, $4, $5)", match, scanInto(&total)},
		batchQuery{"SELECT * FROM qg_list_dlq($1, $2, $3, $4, $5, $6, $7)", slices.Concat(match, []any{f.Page.Limit, f.Page.Offset}),
			func(r rowScanner) error {
				var e DLQEntry
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
