package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/mq"
)

// WorkerMinute is what one instance did in one minute since its previous flush: counters are
// deltas, gauges the largest sample. Field names are the columns of metrics_worker_minute.
type WorkerMinute struct {
	Minute        time.Time `json:"minute"`
	Requests      int64     `json:"requests"`
	PushRequests  int64     `json:"push_requests"`
	PopRequests   int64     `json:"pop_requests"`
	PopEmpty      int64     `json:"pop_empty"`
	AckRequests   int64     `json:"ack_requests"`
	Transactions  int64     `json:"transactions"`
	PushMessages  int64     `json:"push_messages"`
	PopMessages   int64     `json:"pop_messages"`
	AckMessages   int64     `json:"ack_messages"`
	AckSuccess    int64     `json:"ack_success"`
	AckFailed     int64     `json:"ack_failed"`
	DBErrors      int64     `json:"db_errors"`
	DLQ           int64     `json:"dlq"`
	LeasesExpired int64     `json:"leases_expired"`
	PushMsSum     float64   `json:"push_ms_sum"`
	PushMsMax     float64   `json:"push_ms_max"`
	PopMsSum      float64   `json:"pop_ms_sum"`
	PopMsMax      float64   `json:"pop_ms_max"`
	AckMsSum      float64   `json:"ack_ms_sum"`
	AckMsMax      float64   `json:"ack_ms_max"`
	TxnMsSum      float64   `json:"txn_ms_sum"`
	TxnMsMax      float64   `json:"txn_ms_max"`
	// Latency histograms (mq.LatencyBoundsMs; dashboard M13): fixed-size arrays, so the JSON
	// always carries every bucket and a minute without requests writes zeros, never null.
	PushMsHist mq.LatencyHist `json:"push_ms_hist"`
	PopMsHist  mq.LatencyHist `json:"pop_ms_hist"`
	AckMsHist  mq.LatencyHist `json:"ack_ms_hist"`
	TxnMsHist  mq.LatencyHist `json:"txn_ms_hist"`
	LagMsSum   float64        `json:"lag_ms_sum"`
	LagCount   int64          `json:"lag_count"`
	LagMsMax   float64        `json:"lag_ms_max"`
	CPUUserUs  int64          `json:"cpu_user_us"`
	CPUSysUs   int64          `json:"cpu_sys_us"`
	RSSBytes   int64          `json:"rss_bytes"`
	PoolSize   int            `json:"pool_size"`
	PoolActive int            `json:"pool_active"`
	PoolIdle   int            `json:"pool_idle"`
	Parked     int            `json:"parked"`
}

// QueueMinute is the part of a WorkerMinute that belongs to one queue (metrics_queue_minute).
type QueueMinute struct {
	Minute       time.Time `json:"minute"`
	Tenant       string    `json:"tenant"` // the queue's tenant: queue names are unique per tenant
	Queue        string    `json:"queue"`
	PushRequests int64     `json:"push_requests"`
	PushMessages int64     `json:"push_messages"`
	PopRequests  int64     `json:"pop_requests"`
	PopMessages  int64     `json:"pop_messages"`
	PopEmpty     int64     `json:"pop_empty"`
	AckRequests  int64     `json:"ack_requests"`
	AckMessages  int64     `json:"ack_messages"`
	AckSuccess   int64     `json:"ack_success"`
	AckFailed    int64     `json:"ack_failed"`
	Transactions int64     `json:"transactions"`
	DLQ          int64     `json:"dlq"`
	LagMsSum     float64   `json:"lag_ms_sum"`
	LagCount     int64     `json:"lag_count"`
	LagMsMax     float64   `json:"lag_ms_max"`
	Parked       int       `json:"parked"`
}

// Instance names a broker instance in the metrics tables.
type Instance struct {
	WorkerID, Hostname string
	PID                int
}

// FlushMetrics adds one instance's per-minute deltas to the metrics tables in one statement.
func (s *Store) FlushMetrics(ctx context.Context, in Instance, workers []WorkerMinute, queues []QueueMinute) error {
	if workers == nil {
		workers = []WorkerMinute{}
	}
	if queues == nil {
		queues = []QueueMinute{}
	}
	w, err := json.Marshal(workers)
	if err != nil {
		return err
	}
	q, err := json.Marshal(queues)
	if err != nil {
		return err
	}
	// A background statement: DB_STATEMENT_TIMEOUT on the broker's clock (docs/api/operations.md §9.1).
	err = s.withConn(budget.Bulk(ctx), func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlMetricsFlush, pgx.StrictNamedArgs{"worker": in.WorkerID, "hostname": in.Hostname,
			"pid": in.PID, "workers": string(w), "queues": string(q), "now": s.nowArg()})
		return err
	})
	return wrap("flush metrics", err)
}

var (
	sqlMetricsFlush   = query("metrics_flush") // run for its effect: its row is not read
	sqlMetricsCluster = queryOf[sampleRow]("metrics_cluster")
)

// sampleRow is a row of metrics_cluster.
type sampleRow struct {
	Family string   `db:"family"`
	Labels []string `db:"labels"`
	Value  float64  `db:"value"`
}

// ClusterMetrics reads the cluster-wide Prometheus families with one query (docs/api/admin-api.md §11.2).
func (s *Store) ClusterMetrics(ctx context.Context) ([]mq.Sample, error) {
	out, err := readAll(ctx, s, sqlMetricsCluster, pgx.StrictNamedArgs{"now": s.nowArg()},
		func(r sampleRow) mq.Sample { return mq.Sample(r) })
	if err != nil {
		return nil, fmt.Errorf("cluster metrics: %w", err)
	}
	return out, nil
}

// Pool reports the connection pool's state without touching the database.
func (s *Store) Pool() mq.PoolStats {
	st := s.pool.Stat()
	return mq.PoolStats{Max: st.MaxConns(), Open: st.TotalConns(), Idle: st.IdleConns(),
		Acquired: st.AcquiredConns(), Waiting: st.ConstructingConns()}
}
