package metrics

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// ContentType is the exposition format GET /metrics/prometheus answers with (docs/api/admin-api.md §11.2).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// clusterTimeout bounds the one query behind the cluster families, so a slow database costs
// a scrape those families, not the scrape.
const clusterTimeout = 2 * time.Second

// family is the help text and type of a cluster-wide family read from the database.
type family struct {
	help    string
	counter bool
}

// clusterFamilies are the families the cluster query may return; anything else is ignored.
var clusterFamilies = map[string]family{
	"queen_cluster_push_requests_total":    {"Push requests served by every instance.", true},
	"queen_cluster_pop_requests_total":     {"Pop requests served by every instance.", true},
	"queen_cluster_ack_requests_total":     {"Ack requests served by every instance.", true},
	"queen_cluster_transactions_total":     {"Transactions served by every instance.", true},
	"queen_cluster_push_messages_total":    {"Messages written by every instance.", true},
	"queen_cluster_pop_messages_total":     {"Messages delivered by every instance.", true},
	"queen_cluster_ack_messages_total":     {"Messages acknowledged through every instance.", true},
	"queen_cluster_ack_total":              {"Acknowledgements by result: success is an accepted completed ack.", true},
	"queen_cluster_db_errors_total":        {"Operations that failed on the database.", true},
	"queen_cluster_dlq_total":              {"Entries written to the dead-letter queue.", true},
	"queen_cluster_leases_expired_total":   {"Leases that expired before their batch was acknowledged.", true},
	"queen_queue_push_requests_per_minute": {"Push requests per queue in the last full minute.", false},
	"queen_queue_push_messages_per_minute": {"Messages written per queue in the last full minute.", false},
	"queen_queue_pop_messages_per_minute":  {"Messages delivered per queue in the last full minute.", false},
	"queen_queue_pop_empty_per_minute":     {"Pops that found nothing per queue in the last full minute.", false},
	"queen_queue_transactions_per_minute":  {"Transactions per queue in the last full minute.", false},
	"queen_queue_ack_per_minute":           {"Acknowledgements per queue and result in the last full minute.", false},
	"queen_queue_pop_lag_milliseconds":     {"Age of delivered messages at delivery in the last full minute.", false},
	"queen_queue_parked_consumers":         {"Parked long-poll pops per queue in the last full minute (largest sample).", false},
	"queen_queue_metrics_age_seconds":      {"Seconds since the queue's metrics were last flushed.", false},
	"queen_worker_requests_per_minute":     {"Requests per instance and operation in the last full minute.", false},
	"queen_worker_messages_per_minute":     {"Messages per instance and operation in the last full minute.", false},
	"queen_worker_ack_per_minute":          {"Acknowledgements per instance and result in the last full minute.", false},
	"queen_worker_db_connections":          {"Open database connections per instance (largest sample of the last full minute).", false},
	"queen_worker_db_errors_per_minute":    {"Database failures per instance in the last full minute.", false},
	"queen_worker_dlq_per_minute":          {"DLQ entries per instance in the last full minute.", false},
	"queen_worker_metrics_age_seconds":     {"Seconds since the instance last flushed its metrics.", false},
	"queen_dlq_depth":                      {"DLQ entries stored, from the stats job.", false},
	"queen_dlq_depth_by_queue":             {"DLQ entries stored per queue, from the stats job.", false},
}

// Bucket bounds of the histograms, in seconds. Requests include long-poll pops, which may
// wait up to two minutes (docs/api/data-api.md §3.1), so the request buckets reach 120 s
// rather than stopping at DefBuckets' 10 s. A message may wait in its queue for hours before
// a consumer pops it, so the delivery buckets reach a day.
var (
	requestBuckets  = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	deliveryBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}
)

// histograms are the instance's latency distributions. Unlike the per-minute figures they are
// never flushed: Prometheus computes quantiles and rates from the buckets itself
// (histogram_quantile), which a per-minute average in the database cannot give.
type histograms struct {
	request  *prometheus.HistogramVec
	delivery prometheus.Histogram
	// overload counts the answers given as load rather than outage (docs/api/operations.md §9.7).
	overload *prometheus.CounterVec
	// limits counts the requests refused by a tenant limit (docs/api/concepts.md §14).
	limits *prometheus.CounterVec
}

func newHistograms() histograms {
	return histograms{
		request: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queen_http_request_duration_seconds",
			Help:    "Time from routing a request to the end of its handler, by method, route pattern and status code.",
			Buckets: requestBuckets,
		}, []string{"method", "route", "code"}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "queen_message_delivery_latency_seconds",
			Help:    "Time from a message's createdAt to its delivery by a pop.",
			Buckets: deliveryBuckets,
		}),
		overload: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_overload_answers_total",
			Help: "Requests answered as load (503 Server busy, 500 Request timed out, a push spooled) because a call passed its deadline on a database the outage probe reached, by route pattern.",
		}, []string{"route"}),
		limits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_tenant_limit_refusals_total",
			Help: "Requests answered 429 because they would pass a tenant limit, by tenant (\"other\" for tenants the limits configuration does not name) and limit (queues, messages, push rate).",
		}, []string{"tenant", "limit"}),
	}
}

// LimitRefused counts one request refused by a tenant limit (queen_tenant_limit_refusals_total).
// tenant must be a tenant named in the limits configuration or "other", so that the label's
// values are bounded by that configuration.
func (c *Collector) LimitRefused(tenant, limit string) {
	c.hist.limits.WithLabelValues(tenant, limit).Inc()
}

// Overload counts one request answered as load, not outage (queen_overload_answers_total).
// route must be the route's pattern, as for ObserveRequest.
func (c *Collector) Overload(route string) {
	c.hist.overload.WithLabelValues(route).Inc()
}

// ObserveRequest records one answered request. route must be the route's pattern (e.g.
// /api/v1/pop/queue/:queue), never the raw path, which would make a series per queue name.
func (c *Collector) ObserveRequest(method, route string, code int, took time.Duration) {
	c.hist.request.WithLabelValues(method, route, strconv.Itoa(code)).Observe(took.Seconds())
}

// Handler serves GET /metrics/prometheus from a registry of its own: this instance's
// families and histograms, the cluster families read from the database with one query
// (omitted when it fails), and the standard Go and process collectors.
func (c *Collector) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(promCollector{c}, c.hist.request, c.hist.delivery, c.hist.overload, c.hist.limits, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := reg.Gather()
		if err != nil {
			c.opts.Log.Warn("gathering metrics", "err", err) // what was gathered is still served
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				http.Error(w, "encoding metrics failed", http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(buf.Bytes()) // a failed write means the scraper went away
	})
}

// promCollector turns a Collector into Prometheus samples at scrape time. It is unchecked
// (Describe sends nothing) because the cluster families and their label values come from the
// database and vary between scrapes.
type promCollector struct{ c *Collector }

func (promCollector) Describe(chan<- *prometheus.Desc) {}

func (p promCollector) Collect(ch chan<- prometheus.Metric) {
	c := p.c
	dbHealthy := 0.0
	if c.opts.Store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		c.flushForScrape(ctx)
		samples, err := c.opts.Store.ClusterMetrics(ctx)
		cancel()
		if err != nil {
			c.opts.Log.Debug("cluster metrics omitted from this scrape", "err", err)
		} else {
			dbHealthy = 1
			for _, s := range samples {
				if f, ok := clusterFamilies[s.Family]; ok {
					emit(ch, s.Family, f.help, f.counter, s.Value, s.Labels...)
				}
			}
		}
		hctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		h, err := c.opts.Store.XminHorizon(hctx)
		cancel()
		if err != nil {
			c.opts.Log.Debug("snapshot horizon omitted from this scrape", "err", err)
		} else {
			c.emitHorizon(ch, h)
		}
	}
	s := c.Snapshot()
	_, virtual := processMemory()
	var pushMaint, popMaint bool
	if c.opts.Maintenance != nil {
		pushMaint, popMaint = c.opts.Maintenance()
	}
	fbPending, fbFailed := c.fileBuffer()
	instance := []struct {
		name, help string
		counter    bool
		value      float64
	}{
		{"queen_uptime_seconds", "Seconds since this instance started.", false, s.Uptime.Seconds()},
		{"queen_cpu_user_microseconds_total", "CPU time in user mode.", true, float64(s.CPUUserMicros)},
		{"queen_cpu_system_microseconds_total", "CPU time in kernel mode.", true, float64(s.CPUSysMicros)},
		{"queen_process_resident_memory_bytes", "Resident memory.", false, float64(s.RSS)},
		{"queen_process_virtual_memory_bytes", "Virtual memory.", false, float64(virtual)},
		{"queen_db_pool_size", "Most database connections (DB_POOL_SIZE).", false, float64(s.Pool.Max)},
		{"queen_db_pool_idle", "Idle database connections.", false, float64(s.Pool.Idle)},
		{"queen_db_pool_active", "Database connections in use.", false, float64(s.Pool.Acquired)},
		{"queen_file_buffer_pending", "Spooled pushes not yet replayed.", false, float64(fbPending)},
		{"queen_file_buffer_failed", "Spooled pushes whose replay is failing.", false, float64(fbFailed)},
		{"queen_file_buffer_db_healthy", "1 when the database answered this scrape.", false, dbHealthy},
		{"queen_maintenance_mode_enabled", "1 when push maintenance mode is on.", false, gauge(pushMaint)},
		{"queen_pop_maintenance_mode_enabled", "1 when pop maintenance mode is on.", false, gauge(popMaint)},
		{"queen_parked_pops", "Long-poll pops parked on this instance.", false, float64(s.Parked)},
	}
	for _, m := range instance {
		emit(ch, m.name, m.help, m.counter, m.value)
	}
	if c.opts.ConsumerCalls != nil {
		for _, cc := range c.opts.ConsumerCalls() {
			emit(ch, "queen_consumer_db_calls_total", "Database calls of pops, acks and transactions, each carrying one or more merged requests.",
				true, float64(cc.Calls), "kind", cc.Kind)
			emit(ch, "queen_consumer_db_call_requests_total", "Requests carried by the database calls of pops, acks and transactions.",
				true, float64(cc.Requests), "kind", cc.Kind)
		}
	}
	if c.opts.Compactions != nil {
		const help = "Rewrites of a hot set of tables while a held snapshot horizon kept their dead row versions (outcome compacted), and attempts that found the tables' locks taken (outcome skipped)."
		for _, x := range c.opts.Compactions() {
			emit(ch, "queen_hot_set_compactions_total", help, true, float64(x.Compacted), "set", x.Set, "outcome", "compacted")
			emit(ch, "queen_hot_set_compactions_total", help, true, float64(x.Skipped), "set", x.Set, "outcome", "skipped")
		}
	}
}

// gauge is a flag's sample: 1 when on.
func gauge(on bool) float64 {
	if on {
		return 1
	}
	return 0
}

// flushForScrape writes this instance's unflushed figures before the cluster query, so the
// cluster counters include everything this instance did up to the scrape: without it they
// read 0 until the first per-minute flush (METRICS_AGGREGATE_INTERVAL_S) and then lag it by
// up to a minute. Flushing adds deltas to the same minute rows, so an early flush changes no
// total. While earlier flushes are failing it does nothing: the periodic flush retries them,
// and scrapes must not fill the bounded backlog with one batch each.
func (c *Collector) flushForScrape(ctx context.Context) {
	c.mu.Lock()
	backlog := len(c.unflushed) > 0
	c.mu.Unlock()
	if backlog {
		return
	}
	if err := c.Flush(ctx); err != nil {
		c.opts.Log.Debug("flush before scrape failed; kept for the next flush", "err", err)
	}
}

// emit sends one constant sample; labels alternate names and values.
func emit(ch chan<- prometheus.Metric, name, help string, counter bool, v float64, labels ...string) {
	var names, values []string
	for i := 0; i+1 < len(labels); i += 2 {
		names = append(names, labels[i])
		values = append(values, labels[i+1])
	}
	kind := prometheus.GaugeValue
	if counter {
		kind = prometheus.CounterValue
	}
	m, err := prometheus.NewConstMetric(prometheus.NewDesc(name, help, names, nil), kind, v, values...)
	if err != nil {
		// Only a label value that is not valid UTF-8 gets here; drop that one sample.
		return
	}
	ch <- m
}
