package mq

// QueueOptions are the 16 options of a queue (concepts.md §2.2), in their JSON names.
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

// DefaultQueueOptions are the options of a queue nobody configured.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600, DedupWindowSeconds: 900}
}
