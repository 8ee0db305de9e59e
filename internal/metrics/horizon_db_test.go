package metrics

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/store"
)

var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		testDSN = dsn
		return m.Run()
	})
}

// recordLog is a slog handler keeping every record, for tests of what is logged.
type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (*recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

// take returns the records at level since the last take (of any level) and forgets them all.
func (l *recordLog) take(level slog.Level) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.records {
		if r.Level == level {
			out = append(out, r)
		}
	}
	l.records = nil
	return out
}

func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// A session of the package's database holding a REPEATABLE READ snapshot past XMIN_WARN_SECONDS
// gets one WARN naming it over two checks, an INFO once it commits, and shows on a scrape.
func TestCheckHorizonWarnsOncePerHeldSnapshot(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DSN: testDSN, Schema: "metrics_horizon", MaxConns: 2,
		ConnectTimeout: 15 * time.Second, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil { // the scrape's cluster families read the schema
		t.Fatal(err)
	}
	logs := &recordLog{}
	c := New(Options{WorkerID: "horizon-test", Store: s, Log: slog.New(logs), XminWarn: time.Millisecond})

	conn, err := pgx.Connect(ctx, testDSN)
	pgtest.CheckConn(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pid, tx := pgtest.HoldSnapshot(t, conn, "")
	time.Sleep(20 * time.Millisecond) // real elapsed time, not an ordering: the snapshot ages

	c.CheckHorizon(ctx)
	c.CheckHorizon(ctx)
	warns := logs.take(slog.LevelWarn)
	if len(warns) != 1 {
		t.Fatalf("two checks of one held snapshot logged %d WARN lines, want 1", len(warns))
	}
	if got := attr(warns[0], "pid").Int64(); got != int64(pid) {
		t.Errorf("the WARN names pid %d, the holder is %d", got, pid)
	}

	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/prometheus", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	text := string(body)
	if !strings.Contains(text, "\nqueen_db_oldest_xmin_age_seconds ") {
		t.Error("the scrape lacks queen_db_oldest_xmin_age_seconds")
	}
	if !strings.Contains(text, "\nqueen_db_oldest_xmin_warning 1\n") {
		t.Errorf("the scrape lacks queen_db_oldest_xmin_warning 1:\n%s", grepLines(text, "queen_db_"))
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.CheckHorizon(ctx)
	if n := len(logs.take(slog.LevelInfo)); n != 1 {
		t.Errorf("the holder committed: %d INFO lines, want 1", n)
	}
	c.CheckHorizon(ctx)
	for _, r := range logs.take(slog.LevelWarn) {
		t.Errorf("nothing held: logged %q", r.Message)
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
