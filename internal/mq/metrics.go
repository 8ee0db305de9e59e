package mq

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
