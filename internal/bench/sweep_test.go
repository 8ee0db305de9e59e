package bench

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// Steps are partition counts separated by commas, read in any order into ascending distinct
// counts; anything that is not a positive count is refused.
func TestParseSweepSteps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{SweepDefaultSteps, []int{10, 1000, 10000, 100000}},
		{"100_000, 10,1000,10", []int{10, 1000, 100000}},
		{"5", []int{5}},
		{"7,,3,", []int{3, 7}},
	} {
		got, err := ParseSweepSteps(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSweepSteps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ",", "0", "-10", "ten", "10,1e3"} {
		if got, err := ParseSweepSteps(bad); err == nil {
			t.Errorf("ParseSweepSteps(%q) = %v, want an error", bad, got)
		}
	}
}

func step(partitions int, push, pop float64) SweepStep {
	return SweepStep{Partitions: partitions, Push: Result{MsgsPerSec: push}, Pop: Result{MsgsPerSec: pop}}
}

// The largest step is compared with the smallest and, when swept, with 1,000 partitions; each
// ratio carries the lower of its push and pop shares.
func TestSweepRatios(t *testing.T) {
	got := sweepRatios([]SweepStep{step(10, 20000, 10000), step(1000, 16000, 9000), step(10000, 15000, 8000), step(100000, 12000, 7200)})
	want := []SweepRatio{
		{Partitions: 100000, Of: 10, Push: 0.6, Pop: 0.72, PushAndPopMin: 0.6},
		{Partitions: 100000, Of: 1000, Push: 0.75, Pop: 0.8, PushAndPopMin: 0.75},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i := range want {
		g, w := got[i], want[i]
		if g.Partitions != w.Partitions || g.Of != w.Of || !near(g.Push, w.Push) || !near(g.Pop, w.Pop) || !near(g.PushAndPopMin, w.PushAndPopMin) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}
	// Without a 1,000 step, only largest ÷ smallest; 1,000 as the largest or smallest step
	// is not compared with itself; a step that measured nothing gives 0, not Inf.
	for _, tc := range []struct {
		steps []SweepStep
		of    []int
	}{
		{[]SweepStep{step(10, 100, 100), step(50000, 50, 80)}, []int{10}},
		{[]SweepStep{step(10, 100, 100), step(1000, 50, 80)}, []int{10}},
		{[]SweepStep{step(1000, 100, 100), step(2000, 90, 80)}, []int{1000}},
		{[]SweepStep{step(10, 100, 100)}, nil},
	} {
		var of []int
		for _, r := range sweepRatios(tc.steps) {
			of = append(of, r.Of)
		}
		if !slices.Equal(of, tc.of) {
			t.Errorf("steps %+v: compared with %v, want %v", tc.steps, of, tc.of)
		}
	}
	if r := sweepRatios([]SweepStep{step(10, 0, 100), step(20, 100, 50)}); r[0].Push != 0 || r[0].Pop != 0.5 || r[0].PushAndPopMin != 0 {
		t.Errorf("a step of 0 msgs/s: %+v", r)
	}
}

// A pop queue holds at least the minimum and a whole number of batches in every partition.
func TestSweepPopMessages(t *testing.T) {
	for _, tc := range []struct{ partitions, batch, least, want int }{
		{10, 10, 200000, 200000},
		{1000, 10, 200000, 200000},
		{100000, 10, 200000, 1000000},
		{3, 10, 100, 120},
		{7, 1, 5, 7},
	} {
		if got := sweepPopMessages(tc.partitions, tc.batch, tc.least); got != tc.want {
			t.Errorf("sweepPopMessages(%d, %d, %d) = %d, want %d", tc.partitions, tc.batch, tc.least, got, tc.want)
		}
	}
}

// A sweep push body is valid JSON with n items, all to the partition asked for.
func TestSweepPushBody(t *testing.T) {
	item := `{"queue":"q","payload":{"a":"x"},"partition":"p`
	var body struct {
		Items []struct {
			Queue, Partition string
			Payload          map[string]string
		}
	}
	if err := json.Unmarshal(sweepPushBody(item, 3, 4711), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Items) != 3 {
		t.Fatalf("%d items, want 3", len(body.Items))
	}
	for _, it := range body.Items {
		if it.Queue != "q" || it.Partition != "p4711" || it.Payload["a"] != "x" {
			t.Errorf("item %+v", it)
		}
	}
}

// The sweep measures pushes and pops at every step against a real broker and compares the
// largest step with the smallest.
func TestSweepMeasuresEveryStep(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	cfg := Config{Server: srv.URL, Duration: 300 * time.Millisecond, PayloadBytes: 20, Sweep: "3,1,12",
		Batch: 5, Conns: 3, Consumers: 2, Messages: 100}
	res, err := Run(context.Background(), "sweep", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var parts []int
	for _, s := range res.Sweep {
		parts = append(parts, s.Partitions)
		t.Logf("%d partitions: push %.0f msgs/s, pop+ack %.0f msgs/s (%d messages)", s.Partitions, s.Push.MsgsPerSec, s.Pop.MsgsPerSec, s.Pop.Messages)
		for name, r := range map[string]Result{"push": s.Push, "pop": s.Pop} {
			if r.Messages == 0 || r.Errors != 0 || r.MsgsPerSec <= 0 {
				t.Errorf("%d partitions, %s: %+v", s.Partitions, name, r)
			}
		}
		if s.Register <= 0 {
			t.Errorf("%d partitions: the first pop took %s", s.Partitions, s.Register)
		}
		// 100 messages rounded up to whole batches of 5 in every partition
		if want := int64(sweepPopMessages(s.Partitions, 5, 100)); s.Pop.Messages > want {
			t.Errorf("%d partitions: popped %d of %d messages", s.Partitions, s.Pop.Messages, want)
		}
	}
	if !slices.Equal(parts, []int{1, 3, 12}) {
		t.Fatalf("steps %v, want [1 3 12]", parts)
	}
	if len(res.SweepRatios) != 1 || res.SweepRatios[0].Partitions != 12 || res.SweepRatios[0].Of != 1 {
		t.Fatalf("ratios %+v, want 12 ÷ 1", res.SweepRatios)
	}
	rt := res.SweepRatios[0]
	if res.Baseline == nil || res.Ratio != rt.PushAndPopMin || math.Abs(res.MsgsPerSec/res.Baseline.RowsPerSec-res.Ratio) > 1e-9 ||
		!strings.HasPrefix(res.Scenario, "sweep/") {
		t.Errorf("result %s: %.0f msgs/s, baseline %+v, ratio %.3f; want the lower share %.3f as msgs/s ÷ baseline",
			res.Scenario, res.MsgsPerSec, res.Baseline, res.Ratio, rt.PushAndPopMin)
	}
}
