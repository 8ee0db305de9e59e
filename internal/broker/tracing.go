package broker

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Operation spans (OpenTelemetry). The broker knows nothing of HTTP: the wire layer's server
// span, if any, arrives in ctx and becomes the parent. Each operation gets a span of its own,
// and each database call within it a child span, so a trace shows how much of a request was
// spent in PostgreSQL (for a pop: per attempt; for a push: the coalesced call it joined,
// including the wait for it).

// noopTracer stands in for an unset Config.Tracer: its spans record nothing and cost a few
// nanoseconds, which is what tracing costs when it is off.
var noopTracer trace.Tracer = noop.NewTracerProvider().Tracer("")

// dbSystem marks the database spans, in OpenTelemetry's semantic-convention spelling.
var dbSystem = attribute.String("db.system.name", "postgresql")

// startOp starts the span of one broker operation (push, pop, ack, transaction).
func (b *Broker) startOp(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attribute.String("messaging.system", "queen"),
		attribute.String("messaging.operation.name", op))
	return b.cfg.Tracer.Start(ctx, "queen."+op, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// startDB starts the child span of one database call of an operation.
func (b *Broker) startDB(ctx context.Context, op string) (context.Context, trace.Span) {
	return b.cfg.Tracer.Start(ctx, "queen.db."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(dbSystem, attribute.String("db.operation.name", op)))
}

// endSpan ends span, marking it failed when err is a failure; a caller that went away is not.
func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
