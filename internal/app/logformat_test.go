package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/config"
)

// TestLogFormat checks LOG_FORMAT end to end: the variable as config reads it picks the
// handler, json writes one parseable object a line and text stays slog's key=value.
func TestLogFormat(t *testing.T) {
	for _, format := range []string{"json", "text", ""} {
		env := map[string]string{"LOG_FORMAT": format}
		cfg, err := config.Load(nil, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		slog.New(newLogHandler(&buf, cfg)).Info("hello", "queue", "q1")
		line := strings.TrimSpace(buf.String())
		var obj map[string]any
		isJSON := json.Unmarshal([]byte(line), &obj) == nil
		switch {
		case format == "json" && (!isJSON || obj["msg"] != "hello" || obj["queue"] != "q1"):
			t.Errorf("LOG_FORMAT=json wrote %q", line)
		case format != "json" && (isJSON || !strings.Contains(line, "msg=hello queue=q1")):
			t.Errorf("LOG_FORMAT=%q wrote %q", format, line)
		}
	}
}
