//go:build otlp

package app

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/config"
)

// otlpProvider builds an SDK tracer provider that batches spans to the configured OTLP/HTTP
// endpoint; shutdown flushes and stops it.
func otlpProvider(ctx context.Context, cfg config.Config, version string) (trace.TracerProvider, func(context.Context) error, error) {
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
			attribute.String("service.version", version),
			attribute.String("service.instance.id", cfg.WorkerID)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, err
	}
	// The SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_* itself; by default it samples
	// every trace that has no sampled-out parent.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
