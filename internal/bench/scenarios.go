package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// pushBody builds a push request of n items for queue; item i goes to partition part(i).
func (r *runner) pushBody(queue string, n int, part func(i int) int, seq int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"queue":%q,"partition":"p%d","payload":%s}`, queue, part(i), r.cfg.payload(seq+i))
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// pushAs runs the push scenario under name. With want set, every item of every measured
// answer must have that status (the spool scenario wants "buffered": a push that reached the
// database instead is not what it measures), and a request with any other counts as an error.
func (r *runner) pushAs(ctx context.Context, name, want string) (Result, error) {
	// A producer's batch goes to one partition (per customer, per tenant…), the next request
	// to the next partition; with Spread, each request's items go to Spread partitions
	// (a producer batching for many customers). Bodies are built once, so the load generator
	// spends its CPU on sending, not on formatting (the broker mints every message id anyway).
	var bodies [][]byte
	if r.cfg.Spread > 1 {
		for _, parts := range spreadParts(r.cfg.Partitions, r.cfg.Spread, spreadBodies) {
			bodies = append(bodies, r.pushBody(r.queue, r.cfg.Batch, func(i int) int { return parts[i%len(parts)] }, 0))
		}
	} else {
		bodies = make([][]byte, r.cfg.Partitions)
		for p := range bodies {
			bodies[p] = r.pushBody(r.queue, r.cfg.Batch, func(int) int { return p }, 0)
		}
	}
	// Each partition is created by an unmeasured push first, and every body is sent once:
	// creating a queue and its partitions (and the first calls on fresh database sessions,
	// which compile the PL/pgSQL functions) costs hundreds of milliseconds once, which is not
	// what the scenario measures.
	for from := 0; from < r.cfg.Partitions; from += 1000 {
		body := r.pushBody(r.queue, min(1000, r.cfg.Partitions-from), func(i int) int { return from + i }, 0)
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, nil); err != nil {
			return Result{}, fmt.Errorf("create the partitions: %w", err)
		}
	}
	for _, body := range bodies {
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, nil); err != nil {
			return Result{}, fmt.Errorf("warm up: %w", err)
		}
	}
	var seq atomic.Int64
	res := r.measure(ctx, name, r.cfg.Conns, nil, func(ctx context.Context, w int, rec *recorder) error {
		body := bodies[int(seq.Add(1))%len(bodies)]
		t := time.Now()
		var ans pushAnswer
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, &ans); err != nil {
			return err
		}
		if want == "buffered" {
			// The spool scenario: every item must have been spooled.
			if ans.Buffered != r.cfg.Batch {
				return fmt.Errorf("push answered %d of %d items %q, want all", ans.Buffered, r.cfg.Batch, want)
			}
			rec.ok(time.Since(t), r.cfg.Batch)
		} else {
			rec.pushed(time.Since(t), r.cfg.Batch, ans.Buffered)
		}
		return nil
	})
	return res, nil
}

// spreadBodies is how many distinct spread requests the push scenario cycles through: enough
// that concurrent requests draw different partition sets, few enough to build once.
const spreadBodies = 64

// spreadParts draws n request shapes, each `spread` distinct partitions out of `partitions`
// in random order, from a fixed seed so runs are comparable.
func spreadParts(partitions, spread, n int) [][]int {
	rng := rand.New(rand.NewPCG(15, 500))
	out := make([][]int, n)
	for k := range out {
		out[k] = rng.Perm(partitions)[:spread]
	}
	return out
}

// prefill writes n messages into queue over partitions, in large batches, unmeasured.
func (r *runner) prefill(ctx context.Context, queue string, n, partitions int) error {
	const chunk = 1000
	errc := make(chan error, 4)
	var next atomic.Int64
	for w := 0; w < 4; w++ {
		go func() {
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= n {
					errc <- nil
					return
				}
				body := r.pushBody(queue, min(chunk, n-from), func(i int) int { return (from + i) % partitions }, from)
				if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, nil); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}

// consumeMessages is how many messages a consume scenario prefills.
func (r *runner) consumeMessages(n int) int {
	if n > 0 {
		return n
	}
	return max(20000, r.cfg.Batch*r.cfg.Conns*100)
}

// popAck prefills and then drains the queue with pops and acks per the ack mode.
func (r *runner) popAck(ctx context.Context, partitions, messages int) (Result, error) {
	total := r.consumeMessages(messages)
	if err := r.prefill(ctx, r.queue, total, partitions); err != nil {
		return Result{}, err
	}
	name := "popack/" + r.cfg.AckMode
	done := func(rec *recorder) bool { return rec.count() >= int64(total) }
	return r.measure(ctx, name, r.cfg.Conns, done, func(ctx context.Context, _ int, rec *recorder) error {
		return r.consumeOnce(ctx, r.queue, "", rec)
	}), nil
}

// consumeOnce pops one batch for group and acknowledges it per the ack mode.
func (r *runner) consumeOnce(ctx context.Context, queue, group string, rec *recorder) error {
	t := time.Now()
	// Consumers long-poll, as the Queen clients do, rather than spin on empty answers.
	q := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&consumerGroup=%s&wait=true&timeout=200", queue, r.cfg.Batch, group)
	if r.cfg.AckMode == "auto" {
		q += "&autoAck=true"
	}
	var p popAnswer
	code, err := r.api.call(ctx, http.MethodGet, q, nil, &p)
	if err != nil || code == http.StatusNoContent {
		return err
	}
	switch r.cfg.AckMode {
	case "auto":
	case "ack":
		for _, m := range p.Messages {
			body, _ := json.Marshal(map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": p.LeaseID, "consumerGroup": group})
			if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/ack", body, nil); err != nil {
				return err
			}
		}
	default:
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/ack/batch", ackBatchBody(group, &p), nil); err != nil {
			return err
		}
	}
	rec.ok(time.Since(t), len(p.Messages))
	return nil
}

// txn: each worker pops one message and acks it while pushing one to the next stage.
func (r *runner) txn(ctx context.Context) (Result, error) {
	total := r.consumeMessages(r.cfg.Messages)
	if err := r.prefill(ctx, r.queue, total, r.cfg.Partitions); err != nil {
		return Result{}, err
	}
	sink := r.queue + "-next"
	// The next stage's partitions are created before measuring, as the push scenario creates
	// its own: a partition's creation serialises on its queue's lock and took 0.2 s apiece on a
	// loaded machine, which put seconds into the first transactions of a short run.
	for from := 0; from < r.cfg.Partitions; from += 1000 {
		body := r.pushBody(sink, min(1000, r.cfg.Partitions-from), func(i int) int { return from + i }, 0)
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/push", body, nil); err != nil {
			return Result{}, fmt.Errorf("create the next stage's partitions: %w", err)
		}
	}
	done := func(rec *recorder) bool { return rec.count() >= int64(total) }
	return r.measure(ctx, "txn", r.cfg.Conns, done, func(ctx context.Context, _ int, rec *recorder) error {
		t := time.Now()
		var p popAnswer
		code, err := r.api.call(ctx, http.MethodGet, "/api/v1/pop/queue/"+r.queue+"?batch=1&wait=true&timeout=200", nil, &p)
		if err != nil || code == http.StatusNoContent {
			return err
		}
		m := p.Messages[0]
		body, _ := json.Marshal(map[string]any{"operations": []map[string]any{
			{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID},
			// the next stage keeps the partition key, as pipelines do
			{"type": "push", "queue": sink, "partition": m.Partition, "transactionId": "next-" + m.TransactionID, "payload": m.Data},
		}, "requiredLeases": []string{p.LeaseID}})
		var ans struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if _, err := r.api.call(ctx, http.MethodPost, "/api/v1/transaction", body, &ans); err != nil {
			return err
		}
		if !ans.Success {
			return fmt.Errorf("transaction rolled back: %s", ans.Error)
		}
		rec.ok(time.Since(t), 1)
		return nil
	}), nil
}

// fanout: every group reads every message; throughput counts deliveries.
func (r *runner) fanout(ctx context.Context) (Result, error) {
	total := r.consumeMessages(r.cfg.Messages)
	if err := r.prefill(ctx, r.queue, total, r.cfg.Partitions); err != nil {
		return Result{}, err
	}
	groups := max(r.cfg.Groups, 1)
	done := func(rec *recorder) bool { return rec.count() >= int64(total*groups) }
	res := r.measure(ctx, fmt.Sprintf("fanout/%dgroups", groups), r.cfg.Conns*groups, done,
		func(ctx context.Context, w int, rec *recorder) error {
			return r.consumeOnce(ctx, r.queue, fmt.Sprintf("g%d", w%groups), rec)
		})
	res.Params += fmt.Sprintf(" groups=%d", groups)
	return res, nil
}

// ackBatchBody is the /ack/batch body acknowledging every message of p, written directly:
// encoding/json over maps cost the load generator 7 µs per message.
func ackBatchBody(group string, p *popAnswer) []byte {
	b := make([]byte, 0, 64+len(p.Messages)*140)
	b = append(b, `{"consumerGroup":`...)
	b = appendJSONString(b, group)
	b = append(b, `,"acknowledgments":[`...)
	for i, m := range p.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"transactionId":`...)
		b = appendJSONString(b, m.TransactionID)
		b = append(b, `,"partitionId":`...)
		b = appendJSONString(b, m.PartitionID)
		b = append(b, `,"leaseId":`...)
		b = appendJSONString(b, p.LeaseID)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendJSONString appends s as a JSON string: Go's quoting where it is the same (printable
// ASCII without quotes or backslashes), encoding/json otherwise.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return strconv.AppendQuote(b, s)
}
