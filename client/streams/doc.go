// Package streams is the Go SDK's stream builder, with the grammar of Queen's streaming SDKs
// (JavaScript, Python, Go): a source queue, stateless operators (Map, Filter, FlatMap),
// KeyBy, tumbling, sliding, session and cron windows in processing or event time, Reduce and
// Aggregate, a Gate, and a sink queue (To) or a side effect (Foreach).
//
//	runner, err := streams.From(c.Queue("orders")).
//		WindowTumbling(60, streams.IdleFlush(1000)).
//		Aggregate(streams.Field("count", func(streams.Record) float64 { return 1 })).
//		To(c.Queue("orders.totals")).
//		Run(ctx, streams.RunOptions{QueryID: "orders.per_min"})
//
// The operators run in the client. The broker (docs/api/streams.md) keeps the query's
// registration, its per-partition state and its cursor, and commits each processing step
// atomically: state changes, sink messages and the ack of the source messages in one
// transaction. A runner that restarts, or another process running the same QueryID, goes on
// from there; the config_hash is the official SDKs', so a query registered by one runtime
// resumes in another. docs/streams.md ("The Go builder") describes the semantics.
package streams
