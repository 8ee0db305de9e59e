package httpapi_test

// The access log (ACCESS_LOG) through the whole API handler, over a data path that answers
// without a database.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// idleData is a data path with a healthy database and nothing to pop; the routes under test
// call no other method.
type idleData struct{ httpapi.DataPath }

func (idleData) Ping(context.Context) error { return nil }
func (idleData) Pop(context.Context, mq.PopRequest) (mq.PopResult, error) {
	return mq.PopResult{}, nil
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) Request()                                          {}
func (noMetrics) ObserveRequest(string, string, int, time.Duration) {}
func (noMetrics) Overload(string)                                   {}
func (noMetrics) Snapshot() mq.InstanceMetrics                      { return mq.InstanceMetrics{} }
func (noMetrics) Handler() http.Handler                             { return http.NotFoundHandler() }
func (noMetrics) Flush(context.Context) error                       { return nil }

// accessCase is one request and the line the access log must write for it.
type accessCase struct {
	method, path string
	route        string
	status       int
	token        string
}

// accessCases cover a routed answer, a refused one, and the answers given before routing (404,
// 405, OPTIONS), which the access log must not leave out.
var accessCases = []accessCase{
	{"GET", "/health", "/health", 200, ""},
	{"HEAD", "/health", "/health", 200, ""},
	{"GET", "/api/v1/pop/queue/secret-orders?wait=false", "/api/v1/pop/queue/:queue", 204, "rw"},
	{"GET", "/api/v1/resources/queues", "/api/v1/resources/queues", 401, ""},
	{"GET", "/no/such/route", "", 404, ""},
	{"DELETE", "/health", "", 405, ""},
	{"OPTIONS", "/api/v1/push", "", 204, ""},
}

// serveLogged serves accessCases through New with ACCESS_LOG on and the given log handler, and
// returns, per case, the answer's body length and the log lines written for it.
func serveLogged(t *testing.T, handler func(io.Writer) slog.Handler, accessLog bool) ([]int, [][]string) {
	t.Helper()
	v, err := auth.New(auth.Config{Algorithm: "HS256", Secret: authSecret})
	if err != nil {
		t.Fatal(err)
	}
	var buf testkit.LogBuffer
	h := httpapi.New(idleData{}, nil, httpapi.Config{Metrics: noMetrics{}, Auth: v, AccessLog: accessLog},
		slog.New(handler(&buf)))
	srv := httptest.NewServer(h)
	defer srv.Close()
	tokens := map[string]string{"rw": authToken(t, jwt.MapClaims{"sub": "u", "roles": []string{"read-write"}})}
	var sizes []int
	var lines [][]string
	seen := 0
	for _, c := range accessCases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+tokens[c.token])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
		sizes = append(sizes, len(body))
		// The line is written when the handler returns, which may be just after the client has
		// read the answer.
		if accessLog {
			testkit.Eventually(t, 5*time.Second, time.Millisecond, func() error {
				if len(buf.Lines()) == seen {
					return fmt.Errorf("no access log line for %s %s", c.method, c.path)
				}
				return nil
			})
		}
		all := buf.Lines()
		lines = append(lines, all[seen:])
		seen = len(all)
	}
	return sizes, lines
}

// TestAccessLogText: ACCESS_LOG=true writes one line per request, with its method, route
// pattern (never the raw path), status, duration and body bytes, every answer included.
func TestAccessLogText(t *testing.T) {
	sizes, lines := serveLogged(t, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) }, true)
	for i, c := range accessCases {
		if len(lines[i]) != 1 {
			t.Errorf("%s %s: %d lines %q, want 1", c.method, c.path, len(lines[i]), lines[i])
			continue
		}
		l := lines[i][0]
		t.Log(l)
		route := "route=" + c.route
		if c.route == "" {
			route = `route=""`
		}
		for _, want := range []string{"level=INFO msg=request method=" + c.method + " " + route + " status=" + strconv.Itoa(c.status) + " durationMs=",
			" bytes=" + strconv.Itoa(sizes[i])} {
			if !strings.Contains(l, want) {
				t.Errorf("%s %s: %q lacks %q", c.method, c.path, l, want)
			}
		}
		if strings.Contains(l, "secret-orders") {
			t.Errorf("raw path logged: %q", l)
		}
	}
}

// TestAccessLogJSON: with the JSON handler (LOG_FORMAT=json) each line is one object with the
// same fields, numbers as numbers.
func TestAccessLogJSON(t *testing.T) {
	sizes, lines := serveLogged(t, func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) }, true)
	for i, c := range accessCases {
		if len(lines[i]) != 1 {
			t.Errorf("%s %s: %d lines %q, want 1", c.method, c.path, len(lines[i]), lines[i])
			continue
		}
		var obj struct {
			Level, Msg, Method, Route string
			Status, Bytes             int
			DurationMs                *float64 `json:"durationMs"`
		}
		if err := json.Unmarshal([]byte(lines[i][0]), &obj); err != nil {
			t.Fatalf("%q: %v", lines[i][0], err)
		}
		if obj.Level != "INFO" || obj.Msg != "request" || obj.Method != c.method || obj.Route != c.route ||
			obj.Status != c.status || obj.Bytes != sizes[i] || obj.DurationMs == nil || *obj.DurationMs < 0 {
			t.Errorf("%s %s: %s", c.method, c.path, lines[i][0])
		}
	}
}

// TestAccessLogOffByDefault: without ACCESS_LOG nothing is logged for a served request.
func TestAccessLogOffByDefault(t *testing.T) {
	_, lines := serveLogged(t, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) }, false)
	for i, c := range accessCases {
		for _, l := range lines[i] {
			if strings.Contains(l, "msg=request") {
				t.Errorf("%s %s logged with ACCESS_LOG off: %q", c.method, c.path, l)
			}
		}
	}
}
