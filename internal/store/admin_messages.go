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
	out, err := collect(ctx, s, listedMessageRows, args.args(), func(r listedMessageRow) mq.ListedMessage {
		return mq.ListedMessage{StoredMessage: mq.StoredMessage(r.storedMessageRow), QueueStatus: r.QueueStatus,
			ConsumedBy: r.ConsumedBy, Groups: r.Groups, Priority: r.Priority, HasQueueMode: r.HasQueueMode,
			BusGroups: r.BusGroups}
	})
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return out, nil
}

// storedMessageRow is the columns qg_list_messages and qg_message_detail share; its fields are
// mq.StoredMessage's.
type storedMessageRow struct {
	ID             string     `db:"id"`
	TransactionID  string     `db:"transaction_id"`
	PartitionID    string     `db:"partition_id"`
	Queue          string     `db:"queue_name"`
	Partition      string     `db:"partition_name"`
	Namespace      string     `db:"namespace"`
	Task           string     `db:"task"`
	Status         string     `db:"status"`
	TraceID        *string    `db:"trace_id"`
	ProducerSub    *string    `db:"producer_sub"`
	CreatedAt      time.Time  `db:"created_at"`
	LeaseExpiresAt *time.Time `db:"lease_expires_at"`
}

// listedMessageRow is a row of qg_list_messages.
type listedMessageRow struct {
	storedMessageRow
	QueueStatus  *string `db:"queue_status"`
	ConsumedBy   int64   `db:"consumed_by"`
	Groups       int64   `db:"total_groups"`
	Priority     int     `db:"priority"`
	HasQueueMode bool    `db:"has_queue_mode"`
	BusGroups    int64   `db:"bus_groups"`
}

// messageDetailRow is the row of qg_message_detail.
type messageDetailRow struct {
	storedMessageRow
	Payload      *string `db:"payload"`
	Encrypted    bool    `db:"encrypted"`
	ErrorMessage *string `db:"error_message"`
	RetryCount   int     `db:"retry_count"`
	LeaseTime    int     `db:"lease_time"`
	RetryLimit   int     `db:"retry_limit"`
	RetryDelay   int     `db:"retry_delay"`
	TTL          int     `db:"ttl"`
	Priority     int     `db:"priority"`
}

// messageConsumerRow is a row of qg_message_consumers; its fields are mq.MessageConsumer's.
type messageConsumerRow struct {
	Group          string     `db:"consumer_group"`
	Consumed       bool       `db:"consumed"`
	LeaseExpiresAt *time.Time `db:"lease_expires_at"`
}

var (
	listedMessageRows   = callOf[listedMessageRow](sqlListMessages)
	messageDetailRows   = callOf[messageDetailRow]("SELECT * FROM qg_message_detail(p_pid => $1::uuid, p_key => $2, p_now => $3)")
	messageConsumerRows = callOf[messageConsumerRow]("SELECT * FROM qg_message_consumers(p_pid => $1::uuid, p_key => $2, p_now => $3)")
)

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
		messageDetailRows.call(args, func(r messageDetailRow) {
			found = true
			d.StoredMessage, d.Payload, d.Encrypted = mq.StoredMessage(r.storedMessageRow), jsonText(r.Payload), r.Encrypted
			d.ErrorMessage, d.RetryCount, d.LeaseTime, d.RetryLimit = r.ErrorMessage, r.RetryCount, r.LeaseTime, r.RetryLimit
			d.RetryDelay, d.TTL, d.Priority = r.RetryDelay, r.TTL, r.Priority
		}),
		messageConsumerRows.call(args, func(r messageConsumerRow) {
			d.Consumers = append(d.Consumers, mq.MessageConsumer(r))
		}))
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

// dlqEntryRow is a row of qg_list_dlq.
type dlqEntryRow struct {
	DLQID         string    `db:"dlq_id"`
	MessageID     string    `db:"message_id"`
	TransactionID string    `db:"transaction_id"`
	PartitionID   string    `db:"partition_id"`
	Queue         string    `db:"queue_name"`
	Partition     string    `db:"partition_name"`
	Group         string    `db:"consumer_group"`
	ErrorMessage  string    `db:"error_message"`
	RetryCount    int       `db:"retry_count"`
	Payload       *string   `db:"payload"`
	Encrypted     bool      `db:"encrypted"`
	TraceID       *string   `db:"trace_id"`
	ProducerSub   *string   `db:"producer_sub"`
	CreatedAt     time.Time `db:"created_at"`
	FailedAt      time.Time `db:"failed_at"`
	MessageStored bool      `db:"message_stored"`
}

var dlqEntryRows = callOf[dlqEntryRow](sqlListDLQ)

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
		dlqEntryRows.call(listDLQArgs{dlqMatchArgs: match, Limit: f.Page.Limit, Offset: f.Page.Offset}.args(),
			func(r dlqEntryRow) {
				entries = append(entries, mq.DLQEntry{DLQID: r.DLQID, MessageID: r.MessageID, TransactionID: r.TransactionID,
					PartitionID: r.PartitionID, Queue: r.Queue, Partition: r.Partition, Group: r.Group,
					ErrorMessage: r.ErrorMessage, RetryCount: r.RetryCount, Payload: jsonText(r.Payload),
					Encrypted: r.Encrypted, TraceID: r.TraceID, ProducerSub: r.ProducerSub, CreatedAt: r.CreatedAt,
					FailedAt: r.FailedAt, MessageStored: r.MessageStored})
			}))
	if err != nil {
		return nil, 0, fmt.Errorf("list dlq: %w", err)
	}
	return entries, total, nil
}
