package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/maintenance"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/waiter"
)

// background builds the metrics collector and the background-job runner (operations.md §5)
// from the configuration; startBackground runs them.
func background(cfg config.Config, st *store.Store, hub *waiter.Hub, log *slog.Logger) (*metrics.Collector, *maintenance.Runner) {
	rec := metrics.New(metrics.Options{WorkerID: cfg.WorkerID, Store: st, Hub: hub,
		SampleInterval: cfg.MetricsSampleInterval, FlushInterval: cfg.MetricsAggregateInterval, Log: log})
	jobs := maintenance.New(st, maintenance.Config{
		WorkerID:                  cfg.WorkerID,
		RetentionInterval:         cfg.RetentionInterval,
		EvictionInterval:          cfg.EvictionInterval,
		LeaseHousekeepingInterval: cfg.LeaseHousekeepingInterval,
		StatsInterval:             cfg.StatsInterval,
		RetentionBatchSize:        cfg.RetentionBatchSize,
		EvictionBatchSize:         cfg.EvictionBatchSize,
		PartitionCleanupDays:      cfg.PartitionCleanupDays,
		MetricsRetentionDays:      cfg.MetricsRetentionDays,
		StatsHistoryRetentionDays: cfg.StatsHistoryRetentionDays,
		Recorder:                  rec,
	}, log)
	return rec, jobs
}

// startBackground starts the metrics sampler and flusher and the job schedule. The returned
// stop ends the jobs (releasing their locks) and then the metrics, after a last flush.
func startBackground(ctx context.Context, rec *metrics.Collector, jobs *maintenance.Runner) (stop func()) {
	mctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); rec.Run(mctx) }()
	jobs.Start(ctx)
	return func() {
		jobs.Stop()
		cancel()
		wg.Wait()
	}
}
