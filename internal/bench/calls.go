package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// callCounts are the broker's consumer-side database calls and the requests they carried, per
// kind (pop, ack, transaction), from its queen_consumer_db_calls_total and
// queen_consumer_db_call_requests_total counters.
type callCounts map[string]struct{ calls, requests float64 }

// callCounts scrapes them; nil when the broker has none (an older build) or the scrape fails:
// the figure is then left out of the result.
func (c *apiClient) callCounts(ctx context.Context) callCounts {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics/prometheus", nil)
	if err != nil {
		return nil
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	out := callCounts{}
	for name, field := range map[string]int{"queen_consumer_db_calls_total": 0, "queen_consumer_db_call_requests_total": 1} {
		mf := mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			kind := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kind = l.GetValue()
				}
			}
			v := out[kind]
			if field == 0 {
				v.calls = m.GetCounter().GetValue()
			} else {
				v.requests = m.GetCounter().GetValue()
			}
			out[kind] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// perCall is the mean number of requests per database call between two scrapes, per kind that
// made calls in between.
func perCall(before, after callCounts) map[string]float64 {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]float64{}
	for kind, a := range after {
		b := before[kind]
		if calls := a.calls - b.calls; calls > 0 {
			out[kind] = (a.requests - b.requests) / calls
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// FormatPerCall is requests-per-call figures as "pop 3.1  ack 5.0  transaction 2.2" (those
// present, in that order).
func FormatPerCall(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"pop", "ack", "transaction"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, v))
		}
	}
	return strings.Join(parts, "  ")
}
