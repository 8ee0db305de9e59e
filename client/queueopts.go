package queen

import (
	"fmt"
	"math"
	"time"
)

// QueueOption sets one queue option for Create or Configure. An option not given goes back
// to the broker's default, because configure replaces a queue's whole configuration.
type QueueOption func(*configureBody) error

// configureBody is the POST /api/v1/configure request.
type configureBody struct {
	Queue     string         `json:"queue"`
	Namespace string         `json:"namespace,omitempty"`
	Task      string         `json:"task,omitempty"`
	Options   map[string]any `json:"options"`
}

// Namespace sets the queue's namespace label (derived from the name by default: the text
// before the first dot), used by namespace/task pops.
func Namespace(ns string) QueueOption {
	return func(b *configureBody) error { b.Namespace = ns; return nil }
}

// Task sets the queue's task label (derived from the name by default).
func Task(task string) QueueOption {
	return func(b *configureBody) error { b.Task = task; return nil }
}

// LeaseTime is how long a pop's lease lasts (default 5 minutes; whole seconds, rounded up).
func LeaseTime(d time.Duration) QueueOption { return seconds("leaseTime", d) }

// RetryLimit is how many counted failures are redelivered before a batch is dead-lettered
// (default 3; 0 dead-letters on the first failure).
func RetryLimit(n int) QueueOption { return count("retryLimit", n) }

// RetryDelay is the pause before a failed batch is delivered again (default 1 s; milliseconds).
func RetryDelay(d time.Duration) QueueOption { return millis("retryDelay", d) }

// Priority ranks the queue in namespace/task pops; higher is served first (default 0).
func Priority(n int) QueueOption { return count("priority", n) }

// MaxSize caps the queue's unconsumed messages; pushes over it fail with "queue full"
// (default 0, no cap).
func MaxSize(n int) QueueOption { return count("maxSize", n) }

// TTL is stored and reported by the broker but has no effect (default 1 hour); use
// MaxWaitTime or retention to remove old messages.
func TTL(d time.Duration) QueueOption { return seconds("ttl", d) }

// DeadLetterQueue is stored and reported only (default false): dead-lettering always happens.
func DeadLetterQueue(on bool) QueueOption { return flag("deadLetterQueue", on) }

// DLQAfterMaxRetries is stored and reported only (default false).
func DLQAfterMaxRetries(on bool) QueueOption { return flag("dlqAfterMaxRetries", on) }

// DelayedProcessing makes each message visible this long after its creation (default 0).
func DelayedProcessing(d time.Duration) QueueOption { return seconds("delayedProcessing", d) }

// WindowBuffer delivers a partition only once its newest message is this old, a debounce
// (default 0).
func WindowBuffer(d time.Duration) QueueOption { return seconds("windowBuffer", d) }

// Retention deletes every message older than d when RetentionEnabled is on (default 0, off).
func Retention(d time.Duration) QueueOption { return seconds("retentionSeconds", d) }

// CompletedRetention deletes consumed messages older than d when RetentionEnabled is on
// (default 0, off).
func CompletedRetention(d time.Duration) QueueOption {
	return seconds("completedRetentionSeconds", d)
}

// RetentionEnabled switches both retention rules on (default false).
func RetentionEnabled(on bool) QueueOption { return flag("retentionEnabled", on) }

// EncryptionEnabled encrypts payloads at rest when the broker has a key (default false).
func EncryptionEnabled(on bool) QueueOption { return flag("encryptionEnabled", on) }

// MaxWaitTime dead-letters and removes messages still unconsumed after d (default 0, off).
func MaxWaitTime(d time.Duration) QueueOption { return seconds("maxWaitTimeSeconds", d) }

// DedupWindow is how long a transactionId stays taken in its partition after its message was
// created, even once the message is gone (default 15 minutes).
func DedupWindow(d time.Duration) QueueOption { return seconds("dedupWindowSeconds", d) }

// seconds sets an option the broker counts in whole seconds; a fraction rounds up so that a
// short but non-zero duration never turns into "off".
func seconds(name string, d time.Duration) QueueOption {
	return func(b *configureBody) error {
		if d < 0 {
			return fmt.Errorf("queen: option %s must not be negative, got %s", name, d)
		}
		b.Options[name] = int64(math.Ceil(d.Seconds()))
		return nil
	}
}

// millis sets an option the broker counts in milliseconds.
func millis(name string, d time.Duration) QueueOption {
	return func(b *configureBody) error {
		if d < 0 {
			return fmt.Errorf("queen: option %s must not be negative, got %s", name, d)
		}
		b.Options[name] = int64(math.Ceil(float64(d) / float64(time.Millisecond)))
		return nil
	}
}

// count sets a non-negative integer option.
func count(name string, n int) QueueOption {
	return func(b *configureBody) error {
		if n < 0 {
			return fmt.Errorf("queen: option %s must not be negative, got %d", name, n)
		}
		b.Options[name] = n
		return nil
	}
}

// flag sets a boolean option.
func flag(name string, on bool) QueueOption {
	return func(b *configureBody) error { b.Options[name] = on; return nil }
}

// QueueConfig is a queue's effective configuration as the broker reports it after configure:
// all options, defaults included.
type QueueConfig struct {
	Queue       string
	QueueID     string
	PartitionID string // of the Default partition, which configure creates
	Namespace   string
	Task        string

	LeaseTime          time.Duration
	RetryLimit         int
	RetryDelay         time.Duration
	Priority           int
	MaxSize            int
	TTL                time.Duration
	DeadLetterQueue    bool
	DLQAfterMaxRetries bool
	DelayedProcessing  time.Duration
	WindowBuffer       time.Duration
	Retention          time.Duration
	CompletedRetention time.Duration
	RetentionEnabled   bool
	EncryptionEnabled  bool
	MaxWaitTime        time.Duration
	DedupWindow        time.Duration
}

// Options returns the options that reproduce c, for a read-modify-write:
// q.Configure(ctx, append(cfg.Options(), queen.RetryLimit(9))...).
func (c QueueConfig) Options() []QueueOption {
	return []QueueOption{
		Namespace(c.Namespace), Task(c.Task),
		LeaseTime(c.LeaseTime), RetryLimit(c.RetryLimit), RetryDelay(c.RetryDelay),
		Priority(c.Priority), MaxSize(c.MaxSize), TTL(c.TTL), DeadLetterQueue(c.DeadLetterQueue),
		DLQAfterMaxRetries(c.DLQAfterMaxRetries), DelayedProcessing(c.DelayedProcessing),
		WindowBuffer(c.WindowBuffer), Retention(c.Retention), CompletedRetention(c.CompletedRetention),
		RetentionEnabled(c.RetentionEnabled), EncryptionEnabled(c.EncryptionEnabled),
		MaxWaitTime(c.MaxWaitTime), DedupWindow(c.DedupWindow),
	}
}

// configureAnswer is the 200 body of POST /api/v1/configure.
type configureAnswer struct {
	QueueID     string `json:"queueId"`
	PartitionID string `json:"partitionId"`
	Queue       string `json:"queue"`
	Namespace   string `json:"namespace"`
	Task        string `json:"task"`
	Options     struct {
		LeaseTime                 int64 `json:"leaseTime"`
		RetryLimit                int   `json:"retryLimit"`
		RetryDelay                int64 `json:"retryDelay"`
		Priority                  int   `json:"priority"`
		MaxSize                   int   `json:"maxSize"`
		TTL                       int64 `json:"ttl"`
		DeadLetterQueue           bool  `json:"deadLetterQueue"`
		DLQAfterMaxRetries        bool  `json:"dlqAfterMaxRetries"`
		DelayedProcessing         int64 `json:"delayedProcessing"`
		WindowBuffer              int64 `json:"windowBuffer"`
		RetentionSeconds          int64 `json:"retentionSeconds"`
		CompletedRetentionSeconds int64 `json:"completedRetentionSeconds"`
		RetentionEnabled          bool  `json:"retentionEnabled"`
		EncryptionEnabled         bool  `json:"encryptionEnabled"`
		MaxWaitTimeSeconds        int64 `json:"maxWaitTimeSeconds"`
		DedupWindowSeconds        int64 `json:"dedupWindowSeconds"`
	} `json:"options"`
}

// config converts the wire answer to typed durations.
func (a configureAnswer) config() QueueConfig {
	o := a.Options
	sec := func(n int64) time.Duration { return time.Duration(n) * time.Second }
	return QueueConfig{
		Queue: a.Queue, QueueID: a.QueueID, PartitionID: a.PartitionID, Namespace: a.Namespace, Task: a.Task,
		LeaseTime: sec(o.LeaseTime), RetryLimit: o.RetryLimit, RetryDelay: time.Duration(o.RetryDelay) * time.Millisecond,
		Priority: o.Priority, MaxSize: o.MaxSize, TTL: sec(o.TTL), DeadLetterQueue: o.DeadLetterQueue,
		DLQAfterMaxRetries: o.DLQAfterMaxRetries, DelayedProcessing: sec(o.DelayedProcessing),
		WindowBuffer: sec(o.WindowBuffer), Retention: sec(o.RetentionSeconds),
		CompletedRetention: sec(o.CompletedRetentionSeconds), RetentionEnabled: o.RetentionEnabled,
		EncryptionEnabled: o.EncryptionEnabled, MaxWaitTime: sec(o.MaxWaitTimeSeconds),
		DedupWindow: sec(o.DedupWindowSeconds),
	}
}
