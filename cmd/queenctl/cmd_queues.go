package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
)

// cmdQueues dispatches queues list|create|configure|delete.
func cmdQueues(a *app, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(a.stdout, `Usage:
  queenctl queues list
  queenctl queues create NAME [option flags]
  queenctl queues configure NAME [option flags]   (replaces every option; unset ones go back to defaults)
  queenctl queues delete NAME                     (exit 3 when the queue did not exist)

Run 'queenctl queues create -h' for the option flags.
`)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "list", "ls":
		return a.queuesList(rest)
	case "create", "configure":
		return a.queuesConfigure(sub, rest)
	case "delete", "rm":
		return a.queuesDelete(rest)
	}
	return a.usageError("unknown queues subcommand %q: want list, create, configure or delete", sub)
}

func (a *app) queuesList(args []string) int {
	fs := a.commandFlags()
	if code, ok := a.parseCmd(fs, args, 0, 0); !ok {
		return code
	}
	qs, err := a.c.Queues(a.ctx)
	if err != nil {
		return a.fail(err)
	}
	rows := make([][]string, len(qs))
	for i, q := range qs {
		rows[i] = []string{q.Name, q.Namespace, q.Task, strconv.Itoa(q.Partitions), strconv.Itoa(q.Messages.Total),
			strconv.Itoa(q.Messages.Pending), strconv.Itoa(q.Messages.Processing)}
	}
	if err := a.show(qs, []string{"NAME", "NAMESPACE", "TASK", "PARTITIONS", "TOTAL", "PENDING", "PROCESSING"}, rows); err != nil {
		return a.fail(err)
	}
	return exitOK
}

// queueOptionFlags registers one flag per queue option. Each flag given appends its option
// to the returned list, so options the user did not name keep the broker's defaults.
func queueOptionFlags(fs *flag.FlagSet) *[]queen.QueueOption {
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

func (a *app) queuesConfigure(sub string, args []string) int {
	fs := a.commandFlags()
	options := queueOptionFlags(fs)
	if code, ok := a.parseCmd(fs, args, 1, 1); !ok {
		return code
	}
	cfg, err := a.c.Queue(fs.Arg(0)).Configure(a.ctx, *options...)
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

func (a *app) queuesDelete(args []string) int {
	fs := a.commandFlags()
	if code, ok := a.parseCmd(fs, args, 1, 1); !ok {
		return code
	}
	existed, err := a.c.Queue(fs.Arg(0)).Delete(a.ctx)
	if err != nil {
		return a.fail(err)
	}
	out := struct {
		Queue   string `json:"queue"`
		Existed bool   `json:"existed"`
	}{fs.Arg(0), existed}
	if err := a.show(out, []string{"QUEUE", "DELETED"}, [][]string{{out.Queue, strconv.FormatBool(existed)}}); err != nil {
		return a.fail(err)
	}
	if !existed {
		return exitNotFound
	}
	return exitOK
}
