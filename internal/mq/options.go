package mq

import "math"

// QueueOptions are the 16 options of a queue (docs/api/concepts.md §2.2), in their JSON names. Every
// option is described once, in OptionTable; code that needs the list of options (configure's
// validation, defaults, the SQL column list check, the SDK and CLI tests) reads the table.
type QueueOptions struct {
	LeaseTime                 int  `json:"leaseTime"`
	RetryLimit                int  `json:"retryLimit"`
	RetryDelay                int  `json:"retryDelay"`
	Priority                  int  `json:"priority"`
	MaxSize                   int  `json:"maxSize"`
	TTL                       int  `json:"ttl"`
	DeadLetterQueue           bool `json:"deadLetterQueue"`
	DLQAfterMaxRetries        bool `json:"dlqAfterMaxRetries"`
	DelayedProcessing         int  `json:"delayedProcessing"`
	WindowBuffer              int  `json:"windowBuffer"`
	RetentionSeconds          int  `json:"retentionSeconds"`
	CompletedRetentionSeconds int  `json:"completedRetentionSeconds"`
	RetentionEnabled          bool `json:"retentionEnabled"`
	EncryptionEnabled         bool `json:"encryptionEnabled"`
	MaxWaitTimeSeconds        int  `json:"maxWaitTimeSeconds"`
	DedupWindowSeconds        int  `json:"dedupWindowSeconds"`
}

// OptionUnit is what an option's value counts.
type OptionUnit string

// Option units. Booleans are the only non-integer kind.
const (
	UnitSeconds      OptionUnit = "seconds"
	UnitMilliseconds OptionUnit = "milliseconds"
	UnitCount        OptionUnit = "count"
	UnitBool         OptionUnit = "bool"
)

// Option describes one queue option: everything the layers need to know about it.
type Option struct {
	Key     string     // JSON key in configure bodies and answers
	Column  string     // column of the queues table
	Unit    OptionUnit // UnitBool for booleans, otherwise an integer ≥ 0
	Default int        // 0 or 1 for booleans
	Doc     string     // one line for help texts
	// Int and Bool return the option's field in a QueueOptions (one of them is nil).
	Int  func(*QueueOptions) *int
	Bool func(*QueueOptions) *bool
}

// MaxOptionValue is the largest integer option value (the columns are PostgreSQL integers).
const MaxOptionValue = math.MaxInt32

// IsBool reports whether the option takes true or false.
func (o Option) IsBool() bool { return o.Unit == UnitBool }

// OptionTable lists the queue options in the reference's order (docs/api/concepts.md §2.2), which is
// also the order in which configure reports the first invalid one.
var OptionTable = []Option{
	{Key: "leaseTime", Column: "lease_time", Unit: UnitSeconds, Default: 300, Doc: "how long a pop's lease lasts",
		Int: func(q *QueueOptions) *int { return &q.LeaseTime }},
	{Key: "retryLimit", Column: "retry_limit", Unit: UnitCount, Default: 3, Doc: "failures redelivered before a batch is dead-lettered",
		Int: func(q *QueueOptions) *int { return &q.RetryLimit }},
	{Key: "retryDelay", Column: "retry_delay", Unit: UnitMilliseconds, Default: 1000, Doc: "pause before a failed batch comes back",
		Int: func(q *QueueOptions) *int { return &q.RetryDelay }},
	{Key: "priority", Column: "priority", Unit: UnitCount, Doc: "rank in namespace/task pops (higher first)",
		Int: func(q *QueueOptions) *int { return &q.Priority }},
	{Key: "maxSize", Column: "max_size", Unit: UnitCount, Doc: "cap on unconsumed messages (0: none)",
		Int: func(q *QueueOptions) *int { return &q.MaxSize }},
	{Key: "ttl", Column: "ttl", Unit: UnitSeconds, Default: 3600, Doc: "stored and reported only",
		Int: func(q *QueueOptions) *int { return &q.TTL }},
	{Key: "deadLetterQueue", Column: "dead_letter_queue", Unit: UnitBool, Doc: "stored and reported only",
		Bool: func(q *QueueOptions) *bool { return &q.DeadLetterQueue }},
	{Key: "dlqAfterMaxRetries", Column: "dlq_after_max_retries", Unit: UnitBool, Doc: "stored and reported only",
		Bool: func(q *QueueOptions) *bool { return &q.DLQAfterMaxRetries }},
	{Key: "delayedProcessing", Column: "delayed_processing", Unit: UnitSeconds, Doc: "messages become visible this long after creation",
		Int: func(q *QueueOptions) *int { return &q.DelayedProcessing }},
	{Key: "windowBuffer", Column: "window_buffer", Unit: UnitSeconds, Doc: "deliver a partition once its newest message is this old",
		Int: func(q *QueueOptions) *int { return &q.WindowBuffer }},
	{Key: "retentionSeconds", Column: "retention_seconds", Unit: UnitSeconds, Doc: "delete messages older than this (with retentionEnabled)",
		Int: func(q *QueueOptions) *int { return &q.RetentionSeconds }},
	{Key: "completedRetentionSeconds", Column: "completed_retention_seconds", Unit: UnitSeconds, Doc: "delete consumed messages older than this (with retentionEnabled)",
		Int: func(q *QueueOptions) *int { return &q.CompletedRetentionSeconds }},
	{Key: "retentionEnabled", Column: "retention_enabled", Unit: UnitBool, Doc: "switch both retention rules on",
		Bool: func(q *QueueOptions) *bool { return &q.RetentionEnabled }},
	{Key: "encryptionEnabled", Column: "encryption_enabled", Unit: UnitBool, Doc: "encrypt payloads at rest",
		Bool: func(q *QueueOptions) *bool { return &q.EncryptionEnabled }},
	{Key: "maxWaitTimeSeconds", Column: "max_wait_time_seconds", Unit: UnitSeconds, Doc: "dead-letter messages unconsumed this long (0: never)",
		Int: func(q *QueueOptions) *int { return &q.MaxWaitTimeSeconds }},
	{Key: "dedupWindowSeconds", Column: "dedup_window_seconds", Unit: UnitSeconds, Default: 900, Doc: "how long a removed message's transactionId stays taken",
		Int: func(q *QueueOptions) *int { return &q.DedupWindowSeconds }},
}

// DefaultQueueOptions are the options of a queue nobody configured.
func DefaultQueueOptions() QueueOptions {
	var q QueueOptions
	for _, o := range OptionTable {
		if o.IsBool() {
			*o.Bool(&q) = o.Default != 0
		} else {
			*o.Int(&q) = o.Default
		}
	}
	return q
}
