package app

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/config"
)

// instrumentationName names the tracer the HTTP layer and the broker start their spans with.
const instrumentationName = "github.com/queen-go/queen"

// traceShutdownTimeout bounds the export of the last spans at Stop: a collector that is away
// must not hold up a shutdown.
const traceShutdownTimeout = 5 * time.Second

// setupTracing picks the tracer the App injects into the HTTP layer and the broker: the
// provider WithTracerProvider gave (tests, embedding programs), else an OTLP/HTTP exporting
// SDK provider when an OTLP endpoint is configured, else none (nil), which the HTTP layer and
// the broker treat as "no tracing at all". shutdown flushes and stops an SDK provider the App
// built; it is nil otherwise.
//
// The exporter is linked only into binaries built with the otlp build tag (tracing_otlp.go):
// it brings gRPC and protobuf along. Without it, a configured endpoint is an error
// (tracing_noexport.go) rather than traces silently dropped.
func setupTracing(ctx context.Context, cfg config.Config, o options) (tracer trace.Tracer, shutdown func(context.Context) error, err error) {
	if o.tracerProvider != nil {
		return o.tracerProvider.Tracer(instrumentationName, trace.WithInstrumentationVersion(o.version)), nil, nil
	}
	if !cfg.TracingEnabled() {
		return nil, nil, nil
	}
	tp, shutdown, err := otlpProvider(ctx, cfg, o.version)
	if err != nil {
		return nil, nil, err
	}
	return tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(o.version)), shutdown, nil
}
