package main

import (
	"fmt"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// queuesCmd is `queenctl queues`: list, get, create, configure and delete queues.
func (a *app) queuesCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "queues",
		Aliases: []string{"queue"},
		Short:   "List and manage queues",
		Example: `  queenctl queues list
  queenctl queues get NAME
  queenctl queues create NAME [option flags]
  queenctl queues configure NAME [option flags]   (replaces every option; unset ones go back to defaults)
  queenctl queues delete NAME                     (exit 3 when the queue did not exist)`,
	})
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List queues with their message counts",
		Args:    nargs(0, 0),
		RunE: a.run(func([]string) int {
			qs, err := a.c.Queues(a.ctx)
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(qs))
			for i, q := range qs {
				rows[i] = []string{q.Name, q.Namespace, q.Task, strconv.Itoa(q.Partitions), strconv.Itoa(q.Messages.Total),
					strconv.Itoa(q.Messages.Pending), strconv.Itoa(q.Messages.Processing)}
			}
			return a.print(qs, []string{"NAME", "NAMESPACE", "TASK", "PARTITIONS", "TOTAL", "PENDING", "PROCESSING"}, rows)
		}),
	}
	get := &cobra.Command{
		Use:               "get NAME",
		Aliases:           []string{"describe"},
		Short:             "Show a queue with its partitions and counts",
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
		RunE: a.run(func(args []string) int {
			d, err := a.c.Queue(args[0]).Detail(a.ctx)
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{countRow("(all)", d.Totals, time.Time{}, time.Time{})}
			for _, p := range d.Partitions {
				rows = append(rows, countRow(p.Name, p.Stats, p.OldestMessage, p.NewestMessage))
			}
			if a.g.output == "" || a.g.output == "table" {
				fmt.Fprintf(a.stdout, "Queue %s (namespace %q, task %q), %d partition(s)\n\n", d.Name, d.Namespace, d.Task, len(d.Partitions))
			}
			return a.print(d, countHeader, rows)
		}),
	}
	configure := func(use, short string) *cobra.Command {
		c := &cobra.Command{
			Use:               use + " NAME",
			Short:             short,
			Args:              nargs(1, 1),
			ValidArgsFunction: a.completeQueues,
		}
		options := queueOptionFlags(c.Flags())
		c.RunE = a.run(func(args []string) int { return a.queuesConfigure(args[0], *options) })
		return c
	}
	del := &cobra.Command{
		Use:               "delete NAME",
		Aliases:           []string{"rm"},
		Short:             "Delete a queue with its messages (exit 3 when it did not exist)",
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
		RunE: a.run(func(args []string) int {
			existed, err := a.c.Queue(args[0]).Delete(a.ctx)
			if err != nil {
				return a.fail(err)
			}
			out := struct {
				Queue   string `json:"queue"`
				Existed bool   `json:"existed"`
			}{args[0], existed}
			if code := a.print(out, []string{"QUEUE", "DELETED"}, [][]string{{out.Queue, strconv.FormatBool(existed)}}); code != exitOK {
				return code
			}
			if !existed {
				return exitNotFound
			}
			return exitOK
		}),
	}
	cmd.AddCommand(list, get, configure("create", "Create a queue with options (or replace its options)"),
		configure("configure", "Replace a queue's options (unset ones go back to defaults)"), del)
	return cmd
}

// countHeader and countRow lay out message counts, for queues get and partitions list.
var countHeader = []string{"PARTITION", "TOTAL", "PENDING", "PROCESSING", "COMPLETED", "DEAD_LETTER", "OLDEST", "NEWEST"}

func countRow(name string, c queen.Counters, oldest, newest time.Time) []string {
	return []string{name, strconv.Itoa(c.Total), strconv.Itoa(c.Pending), strconv.Itoa(c.Processing),
		strconv.Itoa(c.Completed), strconv.Itoa(c.DeadLetter), ts(oldest), ts(newest)}
}

// partitionsCmd is `queenctl partitions list QUEUE`.
func (a *app) partitionsCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "partitions",
		Short:   "List a queue's partitions",
		Example: "  queenctl partitions list orders",
	})
	cmd.AddCommand(&cobra.Command{
		Use:               "list QUEUE",
		Aliases:           []string{"ls"},
		Short:             "List a queue's partitions with their message counts",
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
		RunE: a.run(func(args []string) int {
			d, err := a.c.Queue(args[0]).Detail(a.ctx)
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(d.Partitions))
			for i, p := range d.Partitions {
				rows[i] = countRow(p.Name, p.Stats, p.OldestMessage, p.NewestMessage)
			}
			return a.print(d.Partitions, countHeader, rows)
		}),
	})
	return cmd
}

// completeQueues completes the first argument with the broker's queue names.
func (a *app) completeQueues(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if a.c == nil {
		if err := a.prepare(cmd); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
	}
	qs, err := a.c.Queues(a.ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// queueOptionFlags registers one flag per queue option. Each flag given appends its option
// to the returned list, so options the user did not name keep the broker's defaults.
func queueOptionFlags(fs *pflag.FlagSet) *[]queen.QueueOption {
	opts := new([]queen.QueueOption)
	add := func(o queen.QueueOption) { *opts = append(*opts, o) }
	label := func(name string, f func(string) queen.QueueOption) {
		fs.Func(name, "queue "+name+" label (default: derived from the name)", func(s string) error {
			add(f(s))
			return nil
		})
	}
	dur := func(name, what string, f func(time.Duration) queen.QueueOption) {
		fs.Func(name, what+" (duration such as 30s; a bare number is seconds)", func(s string) error {
			var d duration
			if err := d.Set(s); err != nil {
				return err
			}
			add(f(time.Duration(d)))
			return nil
		})
	}
	num := func(name, what string, f func(int) queen.QueueOption) {
		fs.Func(name, what+" (integer ≥ 0)", func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return fmt.Errorf("want an integer ≥ 0")
			}
			add(f(n))
			return nil
		})
	}
	flg := func(name, what string, f func(bool) queen.QueueOption) {
		fs.BoolFunc(name, what+" (=false to turn off)", func(s string) error {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			add(f(b))
			return nil
		})
	}
	label("namespace", queen.Namespace)
	label("task", queen.Task)
	dur("lease-time", "how long a pop's lease lasts (default 5m)", queen.LeaseTime)
	num("retry-limit", "failures redelivered before dead-lettering (default 3)", queen.RetryLimit)
	dur("retry-delay", "pause before a failed batch comes back (default 1s)", queen.RetryDelay)
	num("priority", "rank in namespace/task pops (default 0)", queen.Priority)
	num("max-size", "cap on unconsumed messages, 0 = none", queen.MaxSize)
	dur("ttl", "stored only (default 1h)", queen.TTL)
	flg("dead-letter-queue", "stored only", queen.DeadLetterQueue)
	flg("dlq-after-max-retries", "stored only", queen.DLQAfterMaxRetries)
	dur("delayed-processing", "messages become visible this long after creation", queen.DelayedProcessing)
	dur("window-buffer", "deliver a partition once its newest message is this old", queen.WindowBuffer)
	dur("retention", "delete messages older than this (with --retention-enabled)", queen.Retention)
	dur("completed-retention", "delete consumed messages older than this (with --retention-enabled)", queen.CompletedRetention)
	flg("retention-enabled", "switch retention on", queen.RetentionEnabled)
	flg("encryption-enabled", "encrypt payloads at rest", queen.EncryptionEnabled)
	dur("max-wait-time", "dead-letter messages unconsumed for this long", queen.MaxWaitTime)
	dur("dedup-window", "how long a transactionId stays taken (default 15m)", queen.DedupWindow)
	return opts
}

// queuesConfigure creates or reconfigures a queue and prints its effective options.
func (a *app) queuesConfigure(name string, options []queen.QueueOption) int {
	cfg, err := a.c.Queue(name).Configure(a.ctx, options...)
	if err != nil {
		return a.fail(err)
	}
	rows := [][]string{
		{"queue", cfg.Queue}, {"namespace", cfg.Namespace}, {"task", cfg.Task},
		{"lease-time", cfg.LeaseTime.String()}, {"retry-limit", strconv.Itoa(cfg.RetryLimit)},
		{"retry-delay", cfg.RetryDelay.String()}, {"priority", strconv.Itoa(cfg.Priority)},
		{"max-size", strconv.Itoa(cfg.MaxSize)}, {"ttl", cfg.TTL.String()},
		{"delayed-processing", cfg.DelayedProcessing.String()}, {"window-buffer", cfg.WindowBuffer.String()},
		{"retention-enabled", strconv.FormatBool(cfg.RetentionEnabled)}, {"retention", cfg.Retention.String()},
		{"completed-retention", cfg.CompletedRetention.String()}, {"max-wait-time", cfg.MaxWaitTime.String()},
		{"dedup-window", cfg.DedupWindow.String()}, {"encryption-enabled", strconv.FormatBool(cfg.EncryptionEnabled)},
	}
	if err := a.show(cfg, []string{"OPTION", "VALUE"}, rows); err != nil {
		return a.fail(err)
	}
	return exitOK
}
