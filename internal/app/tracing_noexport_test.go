//go:build !otlp

package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
)

// A binary built without the exporter refuses to start when an OTLP endpoint is configured,
// naming the way out, instead of dropping the traces it was asked to export.
func TestOTLPEndpointWithoutExporterRefusesToStart(t *testing.T) {
	for _, set := range []func(*config.Config){
		func(c *config.Config) { c.OTLPEndpoint = "http://127.0.0.1:4318" },
		func(c *config.Config) { c.OTLPTracesEndpoint = "http://127.0.0.1:4318/v1/traces" },
	} {
		cfg := productionConfig(t, testDSN, freshSchema("app_no_otlp"))
		cfg.PprofAddr = ""
		set(&cfg)
		a, err := app.New(context.Background(), cfg, app.WithVersion("test"))
		if err == nil {
			a.Stop()
			t.Fatal("New started a broker with an OTLP endpoint and no exporter")
		}
		if !errors.Is(err, app.ErrNoOTLPExport) {
			t.Errorf("New: %v, want ErrNoOTLPExport", err)
		}
	}
}
