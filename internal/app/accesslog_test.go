package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/testkit"
)

// TestAccessLogVariable: ACCESS_LOG=true, read as the configuration reads it, reaches the API
// handler, which logs each request to the broker's logger; unset, it logs none.
func TestAccessLogVariable(t *testing.T) {
	schema := freshSchema("access_log")
	for _, on := range []string{"true", ""} {
		env := map[string]string{"ACCESS_LOG": on}
		loaded, err := config.Load(nil, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		cfg := productionConfig(t, testDSN, schema)
		cfg.AccessLog = loaded.AccessLog
		var log testkit.LogBuffer
		a, err := app.New(t.Context(), cfg, app.WithLogger(log.Logger()))
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/health", nil)
		req.Host = "127.0.0.1" // HOST is loopback: another Host is refused (421)
		a.Handler().ServeHTTP(httptest.NewRecorder(), req)
		a.Stop()
		var lines []string
		for _, l := range log.Lines() {
			if strings.Contains(l, "msg=request ") {
				lines = append(lines, l)
			}
		}
		switch {
		case on == "true" && (len(lines) != 1 || !strings.Contains(lines[0], "method=GET route=/health status=200")):
			t.Errorf("ACCESS_LOG=true: access lines %q; log:\n%s", lines, log.String())
		case on == "" && len(lines) != 0:
			t.Errorf("ACCESS_LOG unset: access lines %q", lines)
		}
	}
}
