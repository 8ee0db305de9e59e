package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
)

// readFlags are the flags that say how a group reads a queue (pop, consume, tail).
type readFlags struct {
	partition, group, mode, from string
	partitions                   int
}

func (r *readFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.partition, "partition", "", "read only this partition")
	fs.StringVar(&r.group, "group", "", "consumer group (default: queue mode)")
	fs.StringVar(&r.mode, "mode", "", "where a new group starts: all, new or new-only")
	fs.StringVar(&r.from, "from", "", "where a new group starts: now or a timestamp (2026-04-26T10:00:00Z)")
	fs.IntVar(&r.partitions, "partitions", 1, "most partitions one pop may claim")
}

// check validates the values locally, so a typo gets a hint instead of a broker 400.
func (r *readFlags) check() error {
	switch queen.SubscriptionMode(r.mode) {
	case "", queen.SubscriptionAll, queen.SubscriptionNew, queen.SubscriptionNewOnly:
	default:
		return fmt.Errorf("invalid --mode %q: want all, new or new-only", r.mode)
	}
	if r.from != "" && r.from != queen.FromNow {
		if _, err := time.Parse(time.RFC3339Nano, r.from); err != nil {
			return fmt.Errorf("invalid --from %q: want now or an RFC 3339 timestamp such as 2026-04-26T10:00:00Z", r.from)
		}
	}
	if r.partitions < 1 {
		return fmt.Errorf("--partitions must be at least 1, got %d", r.partitions)
	}
	return nil
}

// cmdPop pops one batch and prints it.
func cmdPop(a *app, args []string) int {
	fs := a.commandFlags()
	var rf readFlags
	rf.register(fs)
	batch := fs.Int("batch", 1, "most messages to pop")
	wait := duration(0)
	fs.Var(&wait, "wait", "long-poll up to this long when nothing is there (e.g. 10s)")
	autoAck := fs.Bool("auto-ack", false, "consume the messages as they are delivered (no lease, at most once)")
	ack := fs.Bool("ack", false, "ack the messages completed once printed")
	if code, ok := a.parseCmd(fs, args, 1, 1); !ok {
		return code
	}
	q := a.c.Queue(fs.Arg(0)).Partition(rf.partition)
	if err := rf.check(); err != nil {
		return a.usageError("%v", err)
	}
	if *batch < 1 {
		return a.usageError("--batch must be at least 1, got %d", *batch)
	}
	b, err := q.Pop(a.ctx, queen.PopOptions{Batch: *batch, Wait: time.Duration(wait), ConsumerGroup: rf.group,
		SubscriptionMode: queen.SubscriptionMode(rf.mode), SubscriptionFrom: rf.from, AutoAck: *autoAck,
		Partitions: rf.partitions})
	if err != nil {
		return a.fail(err)
	}
	if b.Empty() {
		fmt.Fprintln(a.stderr, "queenctl pop: no message")
		return exitNotFound
	}
	if err := a.printMessages(b.Messages); err != nil {
		return a.fail(err)
	}
	if *ack && !*autoAck {
		acks := make([]queen.Ack, len(b.Messages))
		for i, m := range b.Messages {
			acks[i] = m.Ack(queen.AckCompleted)
		}
		return a.ackAll(acks, false)
	}
	return exitOK
}

// printMessages prints messages as JSON lines, or as a table with --output table.
func (a *app) printMessages(ms []*queen.Message) error {
	if a.g.output != "table" {
		for _, m := range ms {
			if err := a.jsonLine(m); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, len(ms))
	for i, m := range ms {
		rows[i] = []string{m.TransactionID, m.Partition, m.PartitionID, m.LeaseID, strconv.Itoa(m.RetryCount),
			truncate(string(m.Data), 60)}
	}
	return a.show(nil, []string{"TRANSACTION_ID", "PARTITION", "PARTITION_ID", "LEASE_ID", "RETRIES", "DATA"}, rows)
}

// cmdAck acks one message named by flags, or every message read from stdin.
func cmdAck(a *app, args []string) int {
	fs := a.commandFlags()
	var ack queen.Ack
	fs.StringVar(&ack.PartitionID, "partition-id", "", "partitionId of the message")
	fs.StringVar(&ack.TransactionID, "txid", "", "transactionId of the message")
	fs.StringVar(&ack.LeaseID, "lease", "", "leaseId of the pop (omit for a lease-less ack)")
	fs.StringVar(&ack.ConsumerGroup, "group", "", "consumer group (default: queue mode)")
	status := fs.String("status", "completed", "completed, failed, retry or dlq")
	fs.StringVar(&ack.Error, "error", "", "failure reason, kept if the message is dead-lettered")
	if code, ok := a.parseCmd(fs, args, 0, 1); !ok {
		return code
	}
	switch ack.Status = queen.AckStatus(*status); ack.Status {
	case queen.AckCompleted, queen.AckFailed, queen.AckRetry, queen.AckDLQ:
	default:
		return a.usageError("invalid --status %q: want completed, failed, retry or dlq", *status)
	}
	fromStdin := fs.NArg() == 1 && fs.Arg(0) == "-"
	switch {
	case fs.NArg() > 0 && !fromStdin:
		return a.usageError("unexpected arguments %q: name the message with --partition-id and --txid, or give - to read messages from stdin", fs.Args())
	case fromStdin && (ack.PartitionID != "" || ack.TransactionID != ""):
		return a.usageError("give --partition-id/--txid or -, not both")
	case !fromStdin && (ack.PartitionID == "" || ack.TransactionID == ""):
		return a.usageError("ack needs --partition-id and --txid, or - to read messages (as printed by pop) from stdin")
	}
	acks := []queen.Ack{ack}
	if fromStdin {
		ms, err := readMessages(a.stdin)
		if err != nil {
			return a.usageError("stdin: %v", err)
		}
		acks = acks[:0]
		for _, m := range ms {
			acks = append(acks, m.Ack(ack.Status).WithError(ack.Error))
		}
	}
	return a.ackAll(acks, true)
}

// readMessages decodes a stream of JSON messages (JSON lines or concatenated values).
func readMessages(r io.Reader) ([]*queen.Message, error) {
	dec := json.NewDecoder(r)
	var out []*queen.Message
	for {
		var m queen.Message
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", len(out)+1, err)
		}
		if m.PartitionID == "" || m.TransactionID == "" {
			return nil, fmt.Errorf("message %d has no partitionId/transactionId", len(out)+1)
		}
		out = append(out, &m)
	}
}

// ackAll sends acks in one request and maps the outcomes to an exit code: 1 if any was
// rejected for a reason other than an unknown message, else 3 if any message was unknown.
func (a *app) ackAll(acks []queen.Ack, print bool) int {
	if len(acks) == 0 {
		fmt.Fprintln(a.stderr, "queenctl ack: no message to ack")
		return exitNotFound
	}
	res, err := a.c.AckBatch(a.ctx, acks...)
	if err != nil {
		return a.fail(err)
	}
	code := exitOK
	rows := make([][]string, len(res))
	for i, r := range res {
		rows[i] = []string{strconv.Itoa(r.Index), r.TransactionID, r.Outcome.String(), strconv.FormatBool(r.DLQ),
			strconv.FormatBool(r.LeaseReleased), r.Error}
		switch {
		case r.OK():
		case r.Outcome == queen.AckMessageNotFound && code == exitOK:
			code = exitNotFound
		default:
			code = exitFailure
		}
		if !r.OK() && !print {
			fmt.Fprintf(a.stderr, "queenctl %s: ack %s: %s\n", a.cmd.name, r.TransactionID, r.Error)
		}
	}
	if print {
		if err := a.show(res, []string{"INDEX", "TRANSACTION_ID", "OUTCOME", "DLQ", "LEASE_RELEASED", "ERROR"}, rows); err != nil {
			return a.fail(err)
		}
	}
	return code
}

// cmdExtend extends a lease.
func cmdExtend(a *app, args []string) int {
	fs := a.commandFlags()
	by := duration(60 * time.Second)
	fs.Var(&by, "by", "new expiry: at least now + this")
	if code, ok := a.parseCmd(fs, args, 1, 1); !ok {
		return code
	}
	res, err := a.c.ExtendLease(a.ctx, fs.Arg(0), time.Duration(by))
	if err != nil {
		return a.fail(err)
	}
	expires := ""
	if !res.ExpiresAt.IsZero() {
		expires = res.ExpiresAt.Format(time.RFC3339Nano)
	}
	if err := a.show(res, []string{"LEASE_ID", "STATUS", "EXPIRES_AT"}, [][]string{{res.LeaseID, res.Status.String(), expires}}); err != nil {
		return a.fail(err)
	}
	if res.Status != queen.LeaseExtended {
		return exitNotFound
	}
	return exitOK
}
