package app

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/config"
)

// instrumentationName names the tracer the HTTP layer and the broker start their spans with.
const instrumentationName = "github.com/queen-go/queen"

// traceShutdownTimeout bounds the export of the last spans at Stop: a collector that is away
// must not hold up a shutdown.
const traceShutdownTimeout = 5 * time.Second

// setupTracing picks the tracer the App injects into the HTTP layer and the broker: the
// provider WithTracerProvider gave (tests), else an OTLP/HTTP exporting SDK provider when an
// OTLP endpoint is configured, else none (nil), which the HTTP layer and the broker treat as
// "no tracing at all". shutdown flushes and stops an SDK provider the App built; it is nil
// otherwise.
func setupTracing(ctx context.Context, cfg config.Config, o options) (tracer trace.Tracer, shutdown func(context.Context) error, err error) {
	if o.tracerProvider != nil {
		return o.tracerProvider.Tracer(instrumentationName, trace.WithInstrumentationVersion(o.version)), nil, nil
	}
	if !cfg.TracingEnabled() {
		return nil, nil, nil
	}
	// The exporter reads the other standard variables itself (OTEL_EXPORTER_OTLP_HEADERS,
	// _TIMEOUT, _COMPRESSION, _CERTIFICATE, ...); the endpoint is passed explicitly so that a
	// Config built by hand behaves like one read from the environment.
	var opts []otlptracehttp.Option
	switch {
	case cfg.OTLPTracesEndpoint != "":
		opts = append(opts, otlptracehttp.WithEndpointURL(cfg.OTLPTracesEndpoint))
	case cfg.OTLPEndpoint != "":
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.OTLPEndpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	// Defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read later, win.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "queen-go"),
			attribute.String("service.version", o.version),
			attribute.String("service.instance.id", cfg.WorkerID)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, err
	}
	// The SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_* itself; by default it samples
	// every trace that has no sampled-out parent.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(o.version)), tp.Shutdown, nil
}
