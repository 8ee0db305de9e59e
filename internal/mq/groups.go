package mq

import "time"

// GroupSummary is one (consumer group, queue) pair of the consumer-group listing.
type GroupSummary struct {
	Group, Queue          string
	Members               int64 // partitions where the group has a cursor
	PartitionsWithLag     int64
	TotalLag              int64
	MaxTimeLag            int64 // seconds
	EverConsumed          bool
	State                 string // Stable, Lagging or Dead
	SubscriptionMode      *string
	SubscriptionTimestamp *time.Time
	SubscriptionCreatedAt *time.Time
}

// PairLag is the lag of one (partition, consumer group) pair.
type PairLag struct {
	Group, Queue, Partition string
	PartitionID             string
	LeaseID                 *string // the live lease, nil when none
	OffsetLag               int64
	TimeLag                 int64 // seconds
	OldestUnconsumed        *time.Time
	LastConsumed            *time.Time
	TotalConsumed           int64
}
