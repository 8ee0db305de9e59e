package mq

import "time"

// Window is a time range read in buckets of BucketMinutes; plan it with SeriesWindow.
type Window struct {
	From, To      time.Time
	BucketMinutes int
	// Start is the first bucket's start when SeriesWindow had to drop the oldest buckets to
	// stay within MaxSeriesPoints; zero (or before From) otherwise.
	Start time.Time
}

// WorkerPoint is what one broker instance did in one bucket.
type WorkerPoint struct {
	At                                            time.Time
	Hostname, WorkerID                            string
	PID, Minutes                                  int
	Requests, PushRequests, PopRequests, PopEmpty int64
	AckRequests, Transactions                     int64
	PushMessages, PopMessages, AckMessages        int64
	AckSuccess, AckFailed, DBErrors, DLQ          int64
	PushMsSum, PushMsMax, PopMsSum, PopMsMax      float64
	AckMsSum, AckMsMax, TxnMsSum, TxnMsMax        float64
	CPUUserUs, CPUSysUs, RSSBytes                 int64
	PoolSize, PoolActive, PoolIdle, Parked        int
	// Latency histograms summed over the bucket, one count per bucket of LatencyBoundsMs
	// (LatencyPercentile reads them; dashboard M13).
	PushHist, PopHist, AckHist, TxnHist []int64
}

// QueuePoint is what happened on one queue in one bucket, over every instance.
type QueuePoint struct {
	At                                      time.Time
	Queue                                   string
	PushRequests, PushMessages, PopRequests int64
	PopMessages, PopEmpty, AckRequests      int64
	AckMessages, AckSuccess, AckFailed      int64
	Transactions, DLQ                       int64
	AvgLagMs, MaxLagMs                      float64
}

// ParkedPoint is the largest number of parked pops on one queue and instance in one bucket.
type ParkedPoint struct {
	At              time.Time
	Queue, WorkerID string
	Parked          int
}

// DepthPoint is a queue's consumer lag and depth in one bucket, from the stats history.
type DepthPoint struct {
	At                      time.Time
	Queue                   string
	MaxTimeLagSeconds       int64
	AvgPending, AvgInFlight float64
}

// RetentionRun is what one retention or eviction run removed from one partition under one rule.
type RetentionRun struct {
	RunID                             string
	At                                time.Time
	Queue, Partition, Kind            string
	Removed, Unconsumed, DeadLettered int64
}

// RetentionTotal sums the runs of one kind.
type RetentionTotal struct {
	Kind                              string
	Removed, Unconsumed, DeadLettered int64
}

// PostgresStats are size and activity figures of the database and of our tables.
type PostgresStats struct {
	Database                          string
	SizeBytes                         int64
	Commits, Rollbacks                int64
	BlocksHit, BlocksRead             int64
	Deadlocks, TempBytes              int64
	Connections, Active, Idle         int64
	IdleInTransaction, WaitingOnLocks int64
	Tables                            []TableStats
	// Horizon is the oldest snapshot horizon held on the database.
	Horizon XminHorizon
}

// XminHorizon is the oldest snapshot horizon held on the database: until the session or slot
// holding it lets go, PostgreSQL can neither vacuum nor prune any row version newer than it, so
// the version chains of rows updated per message grow and every operation slows down
// (docs/operations.md, "A held snapshot horizon").
type XminHorizon struct {
	// Holder is the backend with the oldest snapshot among those inside a transaction on this
	// database (the reading session excluded); nil when none holds one.
	Holder *XminHolder
	// Replication are the replication slots and the walsenders without a transaction (standbys'
	// hot_standby_feedback) holding a horizon, oldest first. Their age is known in transaction
	// ids only: PostgreSQL records no time for them.
	Replication []ReplicationHorizon
}

// AgeKnown reports whether the horizon's age in seconds is known: a holder whose transaction
// start the broker's database user may read (XminHolder.Hidden).
func (h XminHorizon) AgeKnown() bool { return h.Holder != nil && !h.Holder.Hidden }

// AgeSeconds is how long the holder's horizon has been held: 0 when there is none or its age is
// unknown (AgeKnown).
func (h XminHorizon) AgeSeconds() float64 {
	if h.Holder == nil {
		return 0
	}
	return h.Holder.AgeSeconds
}

// Past reports whether the horizon has been held longer than threshold (XMIN_WARN_SECONDS).
func (h XminHorizon) Past(threshold time.Duration) bool {
	return h.Holder != nil && h.Holder.AgeSeconds > threshold.Seconds()
}

// XminHolder is the session holding the oldest snapshot.
type XminHolder struct {
	PID                                 int
	ApplicationName, State, BackendType string
	// Hidden: another role's session, and the broker's database user is not a member of
	// pg_read_all_stats. PostgreSQL then shows its pid, application name and xmin but not its
	// state, type or transaction start: State and BackendType are "", XactStart is zero and
	// AgeSeconds 0, and only XidAge tells how old the horizon is.
	Hidden bool
	// XactStart is when its transaction began; AgeSeconds is the time since, on the
	// database's clock. A snapshot cannot be older than its transaction, and the holders that
	// pin a horizon (REPEATABLE READ and SERIALIZABLE transactions, open cursors, a long
	// statement) take it at or near the start, so this is the age, or slightly more.
	XactStart  time.Time
	AgeSeconds float64
	// XidAge is age(backend_xmin): the transactions begun since its snapshot.
	XidAge int64
}

// ReplicationHorizon is a replication slot (Type physical or logical) or a walsender (Type
// walsender) holding a horizon. XminAge holds back every table; CatalogXminAge (logical slots)
// the system catalogs only. nil: it holds none of that kind.
type ReplicationHorizon struct {
	Name, Type              string
	Active                  bool
	XminAge, CatalogXminAge *int64
}

// PinsRows reports whether it keeps vacuum and pruning from removing row versions of the
// queue's tables: an xmin (a physical slot or a walsender fed by a standby's
// hot_standby_feedback, or a slot whose xmin is set), not a catalog_xmin alone, which holds
// back the system catalogs only (an idle logical slot).
func (r ReplicationHorizon) PinsRows() bool { return r.XminAge != nil }

// TableStats are size and activity figures of one table.
type TableStats struct {
	Name                             string
	Rows, TotalBytes, TableBytes     int64
	IndexBytes, SeqScans, IndexScans int64
	DeadRows                         int64
	LastVacuum                       *time.Time
}

// QueueRank is how a per-queue analytics route picks the queues it answers when it cannot
// answer them all (docs/api/admin-api.md §6).
type QueueRank int

// The rankings: messages pushed plus popped (queue-ops), the same among queues with parked
// pops (queue-parked-replicas), the largest lag (queue-lag), messages removed (retention).
const (
	RankTraffic QueueRank = iota
	RankParked
	RankLag
	RankRemoved
)

// QueueSeriesSet is a per-queue series bounded to the busiest queues: the points of the queues
// answered, and how many queues of the window were left out.
type QueueSeriesSet[T any] struct {
	Points  []T
	Omitted int
}
