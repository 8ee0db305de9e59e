package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readFlags are the flags that say how a group reads a queue (pop, consume, tail).
type readFlags struct {
	partition, group, mode, from string
	partitions                   int
}

func (r *readFlags) register(fs *pflag.FlagSet) {
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

// popCmd pops one batch and prints it.
func (a *app) popCmd() *cobra.Command {
	var rf readFlags
	var batch int
	var wait duration
	var autoAck, ack bool
	cmd := &cobra.Command{
		Use:   "pop QUEUE",
		Short: "Pop messages and print them as JSON lines",
		Long: `Pop one batch of messages and print them as JSON lines (a table with -o table, YAML
documents with -o yaml); 'queenctl ack -' reads what pop printed.

A pop claims one partition unless --partitions says more, so --batch 10 may return fewer
messages while other partitions hold more: when stderr is a terminal, pop says so.`,
		Example: `  queenctl pop orders --batch 10 --wait 5s > batch.jsonl
  queenctl ack - < batch.jsonl`,
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
	}
	f := cmd.Flags()
	rf.register(f)
	f.IntVar(&batch, "batch", 1, "most messages to pop")
	f.Var(&wait, "wait", "long-poll up to this long when nothing is there (e.g. 10s)")
	f.BoolVar(&autoAck, "auto-ack", false, "consume the messages as they are delivered (no lease, at most once)")
	f.BoolVar(&ack, "ack", false, "ack the messages completed once printed")
	cmd.RunE = a.run(func(args []string) int {
		q := a.c.Queue(args[0]).Partition(rf.partition)
		if err := rf.check(); err != nil {
			return a.usageError("%v", err)
		}
		if batch < 1 {
			return a.usageError("--batch must be at least 1, got %d", batch)
		}
		b, err := q.Pop(a.ctx, queen.PopOptions{Batch: batch, Wait: time.Duration(wait), ConsumerGroup: rf.group,
			SubscriptionMode: queen.SubscriptionMode(rf.mode), SubscriptionFrom: rf.from, AutoAck: autoAck,
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
		if n := len(b.Messages); n < batch && rf.partitions == 1 && rf.partition == "" && stderrIsTerminal(a.stderr) {
			fmt.Fprintf(a.stderr, "queenctl pop: %d of %d: a pop claims one partition; other partitions may hold more (--partitions N reads up to N at once)\n", n, batch)
		}
		if ack && !autoAck {
			acks := make([]queen.Ack, len(b.Messages))
			for i, m := range b.Messages {
				acks[i] = m.Ack(queen.AckCompleted)
			}
			return a.ackAll(acks, false)
		}
		return exitOK
	})
	return cmd
}

// printMessages prints messages as JSON lines, YAML documents with --output yaml, or a
// table with --output table.
func (a *app) printMessages(ms []*queen.Message) error {
	if a.g.output != "table" {
		for _, m := range ms {
			if err := a.record(m); err != nil {
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

// ackCmd acks one message named by flags, or every message read from stdin.
func (a *app) ackCmd() *cobra.Command {
	var ack queen.Ack
	var status string
	cmd := &cobra.Command{
		Use:   "ack [-]",
		Short: "Ack a message by ids, or the messages read as JSON lines from stdin",
		Example: `  queenctl ack --partition-id PARTITION_ID --txid TRANSACTION_ID
  queenctl pop orders --batch 10 | queenctl ack -
  queenctl ack - --status failed --error "cannot parse" < batch.jsonl`,
		Args: nargs(0, 1),
	}
	f := cmd.Flags()
	f.StringVar(&ack.PartitionID, "partition-id", "", "partitionId of the message")
	f.StringVar(&ack.TransactionID, "txid", "", "transactionId of the message")
	f.StringVar(&ack.LeaseID, "lease", "", "leaseId of the pop (omit for a lease-less ack)")
	f.StringVar(&ack.ConsumerGroup, "group", "", "consumer group (default: queue mode)")
	f.StringVar(&status, "status", "completed", "completed, failed, retry or dlq")
	f.StringVar(&ack.Error, "error", "", "failure reason, kept if the message is dead-lettered")
	cmd.RunE = a.run(func(args []string) int {
		switch ack.Status = queen.AckStatus(status); ack.Status {
		case queen.AckCompleted, queen.AckFailed, queen.AckRetry, queen.AckDLQ:
		default:
			return a.usageError("invalid --status %q: want completed, failed, retry or dlq", status)
		}
		fromStdin := len(args) == 1 && args[0] == "-"
		switch {
		case len(args) > 0 && !fromStdin:
			return a.usageError("unexpected arguments %q: name the message with --partition-id and --txid, or give - to read messages from stdin", args)
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
	})
	return cmd
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
			fmt.Fprintf(a.stderr, "queenctl %s: ack %s: %s\n", a.name, r.TransactionID, r.Error)
		}
	}
	if print {
		if err := a.show(res, []string{"INDEX", "TRANSACTION_ID", "OUTCOME", "DLQ", "LEASE_RELEASED", "ERROR"}, rows); err != nil {
			return a.fail(err)
		}
	}
	return code
}

// extendCmd extends a lease.
func (a *app) extendCmd() *cobra.Command {
	by := duration(60 * time.Second)
	cmd := &cobra.Command{
		Use:   "extend LEASE_ID",
		Short: "Extend a lease",
		Args:  nargs(1, 1),
	}
	cmd.Flags().Var(&by, "by", "new expiry: at least now + this")
	cmd.RunE = a.run(func(args []string) int {
		res, err := a.c.ExtendLease(a.ctx, args[0], time.Duration(by))
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
	})
	return cmd
}
