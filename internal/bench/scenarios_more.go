package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// partitions compares a wildcard pop over 10,000 partitions with the same scenario over 100:
// the same messages, batch and consumers; the ratio is many-partitions over few.
func (r *runner) partitions(ctx context.Context) (Result, error) {
	many := max(r.cfg.Partitions, 10000)
	perPartition := max(r.cfg.Batch, 10)
	total := many * perPartition
	if r.cfg.AckMode == "" {
		r.cfg.AckMode = "batch"
	}
	few := *r
	few.queue = r.queue + "-few"
	base, err := few.popAck(ctx, 100, total)
	if err != nil {
		return Result{}, err
	}
	res, err := r.popAck(ctx, many, total)
	if err != nil {
		return Result{}, err
	}
	res.Scenario = fmt.Sprintf("partitions/%d", many)
	res.Baseline = &Baseline{Name: "same scenario with 100 partitions", RowsPerSec: base.MsgsPerSec}
	res.Ratio = res.MsgsPerSec / base.MsgsPerSec
	return res, nil
}

// e2e offers messages at a fixed rate and measures push-to-delivery latency with long-polling
// consumers (latency is taken from the payload's send time).
func (r *runner) e2e(ctx context.Context) (Result, error) {
	rate := max(r.cfg.Rate, 1)
	prodCtx, stop := context.WithTimeout(ctx, r.cfg.Duration)
	defer stop()
	go func() {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-prodCtx.Done():
				return
			case <-t.C:
				go r.api.call(prodCtx, http.MethodPost, "/api/v1/push", r.pushBody(r.queue, 1, func(int) int { return seq % r.cfg.Partitions }, seq), nil)
			}
		}
	}()
	res := r.measure(ctx, "e2e", r.cfg.Conns, nil, func(ctx context.Context, _ int, rec *recorder) error {
		var p popAnswer
		q := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&autoAck=true&wait=true&timeout=1000", r.queue, max(r.cfg.Batch, 1))
		code, err := r.api.call(ctx, http.MethodGet, q, nil, &p)
		if err != nil || code == http.StatusNoContent {
			return err
		}
		now := time.Now().UnixNano()
		for _, m := range p.Messages {
			var body struct {
				SentAt int64 `json:"sentAt"`
			}
			if json.Unmarshal(m.Data, &body) == nil {
				rec.ok(time.Duration(now-body.SentAt), 1)
			}
		}
		return nil
	})
	res.Params += fmt.Sprintf(" rate=%d/s", rate)
	return res, nil
}
