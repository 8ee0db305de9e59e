//go:build !otlp

package app

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/queen-go/queen/internal/config"
)

// ErrNoOTLPExport is New's error when an OTLP endpoint is configured in a binary built without
// the exporter: a broker asked to export traces that it cannot export refuses to start instead
// of dropping them unseen.
var ErrNoOTLPExport = errors.New("OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, " +
	"but this binary has no trace exporter: run the queen-otlp release binary or build with -tags otlp " +
	"(docs/operations.md, Tracing), or unset the variable")

// otlpProvider refuses: the exporter is not linked into this binary.
func otlpProvider(context.Context, config.Config, string) (trace.TracerProvider, func(context.Context) error, error) {
	return nil, nil, ErrNoOTLPExport
}
