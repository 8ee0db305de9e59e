package metrics

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queen-go/queen/internal/mq"
)

// The warning of XMIN_WARN_SECONDS is logged once per crossing: not again while the same
// session holds the horizon, again when another session becomes the holder past the threshold,
// and an INFO when the horizon is young again.
func TestHorizonWatchLogsOncePerCrossing(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	held := func(pid int, age float64) mq.XminHorizon {
		return mq.XminHorizon{Holder: &mq.XminHolder{PID: pid, AgeSeconds: age}}
	}
	var w horizonWatch
	steps := []struct {
		h    mq.XminHorizon
		want string // the level logged, "" for none
	}{
		{mq.XminHorizon{}, ""},
		{held(7, 100), ""},           // young
		{held(7, 301), "level=WARN"}, // crossing
		{held(7, 400), ""},           // still the same holder
		{held(8, 500), "level=WARN"}, // another holder past it
		{held(8, 200), "level=INFO"}, // young again
		{mq.XminHorizon{}, ""},
		{held(8, 301), "level=WARN"}, // a new crossing
		{mq.XminHorizon{}, "level=INFO"},
		{mq.XminHorizon{Holder: &mq.XminHolder{PID: 9, Hidden: true, XidAge: 5000}}, ""}, // age unknown: no warning
	}
	for i, s := range steps {
		buf.Reset()
		w.observe(log, s.h, 300*time.Second)
		got := buf.String()
		if s.want == "" && got != "" || s.want != "" && (strings.Count(got, "\n") != 1 || !strings.Contains(got, s.want)) {
			t.Errorf("step %d: logged %q, want %q", i, got, s.want)
		}
	}
}

// emitHorizon's families for one reading: the age omitted when the holder is hidden (unknown,
// not 0), the transaction ids of each source, the replication holders counted.
func TestEmitHorizonFamilies(t *testing.T) {
	c := New(Options{XminWarn: time.Minute})
	xids := func(n int64) *int64 { return &n }
	read := func(h mq.XminHorizon) map[string]float64 {
		ch := make(chan prometheus.Metric, 16)
		c.emitHorizon(ch, h)
		close(ch)
		got := map[string]float64{}
		for m := range ch {
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			name := m.Desc().String()
			name = name[strings.Index(name, `fqName: "`)+9:]
			name = name[:strings.Index(name, `"`)]
			for _, l := range pb.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = pb.GetGauge().GetValue()
		}
		return got
	}
	check := func(what string, got map[string]float64, want map[string]float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v (present %v), want %v", what, k, g, ok, v)
			}
		}
	}
	const txn, repl, cat = "queen_db_oldest_xmin_age_transactions{source=transaction}",
		"queen_db_oldest_xmin_age_transactions{source=replication}",
		"queen_db_oldest_xmin_age_transactions{source=replication_catalog}"
	check("none held", read(mq.XminHorizon{}), map[string]float64{"queen_db_oldest_xmin_age_seconds": 0,
		"queen_db_oldest_xmin_warning": 0, txn: 0, repl: 0, cat: 0, "queen_db_replication_xmin_holders": 0})
	check("held past the threshold", read(mq.XminHorizon{
		Holder: &mq.XminHolder{PID: 7, AgeSeconds: 90, XidAge: 1200},
		Replication: []mq.ReplicationHorizon{{Name: "a", Type: "physical", XminAge: xids(300)},
			{Name: "b", Type: "logical", XminAge: xids(700), CatalogXminAge: xids(900)}},
	}), map[string]float64{"queen_db_oldest_xmin_age_seconds": 90, "queen_db_oldest_xmin_warning": 1,
		txn: 1200, repl: 700, cat: 900, "queen_db_replication_xmin_holders": 2})
	check("hidden holder", read(mq.XminHorizon{Holder: &mq.XminHolder{PID: 9, Hidden: true, XidAge: 5000}}),
		map[string]float64{"queen_db_oldest_xmin_warning": 0, txn: 5000, repl: 0, cat: 0,
			"queen_db_replication_xmin_holders": 0})
}
