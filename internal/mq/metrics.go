package mq

import "time"

// Sample is one value of a cluster-wide Prometheus family; Labels alternate names and values.
type Sample struct {
	Family string
	Labels []string
	Value  float64
}

// PoolStats describes this instance's connection pool.
type PoolStats struct {
	Max      int32 // DB_POOL_SIZE
	Open     int32 // connections open now
	Idle     int32
	Acquired int32 // in use
	Waiting  int32 // being established; requests wait on these
}

// InstanceMetrics is this instance's figures for GET /metrics (docs/api/admin-api.md §11.1).
type InstanceMetrics struct {
	Uptime                      time.Duration
	Requests, Messages          int64   // HTTP requests served, messages written
	RequestRate, MessageRate    float64 // per second over the last minute
	Pool                        PoolStats
	RSS, HeapTotal, HeapUsed    int64
	CPUUserMicros, CPUSysMicros int64
	Parked                      int
}
