package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// streamFlags are the flags of the long-running readers, consume and tail.
type streamFlags struct {
	readFlags
	batch, concurrency, limit int
	idle, wait                duration
}

func (s *streamFlags) register(fs *pflag.FlagSet) {
	s.readFlags.register(fs)
	fs.IntVar(&s.batch, "batch", 10, "messages per pop")
	fs.IntVar(&s.concurrency, "concurrency", 1, "parallel workers (each keeps its partitions in order)")
	fs.IntVar(&s.limit, "limit", 0, "stop after this many messages (0: no limit)")
	fs.Var(&s.idle, "idle", "stop once no message arrived for this long (0: run until interrupted)")
	s.wait = duration(30 * time.Second)
	fs.Var(&s.wait, "wait", "long-poll time of each pop")
}

func (s *streamFlags) check() error {
	if s.batch < 1 || s.concurrency < 1 || s.limit < 0 {
		return fmt.Errorf("--batch and --concurrency must be at least 1 and --limit not negative")
	}
	return s.readFlags.check()
}

func (s *streamFlags) options() queen.ConsumeOptions {
	return queen.ConsumeOptions{Concurrency: s.concurrency, BatchSize: s.batch, ConsumerGroup: s.group,
		SubscriptionMode: queen.SubscriptionMode(s.mode), SubscriptionFrom: s.from, Partitions: s.partitions,
		PollWait: time.Duration(s.wait), IdleTimeout: time.Duration(s.idle), Limit: s.limit}
}

// consumeCmd is a worker on the command line: each message is printed as a JSON line and
// then acked completed; Ctrl-C stops gracefully (nothing lost, nothing acked twice).
func (a *app) consumeCmd() *cobra.Command {
	var sf streamFlags
	var autoAck bool
	cmd := &cobra.Command{
		Use:   "consume QUEUE",
		Short: "Consume messages: print each as a JSON line, then ack it",
		Long: `Consume (drain) a queue: print each message as a JSON line (YAML documents with -o yaml),
then ack it completed. Ctrl-C stops gracefully: the message in hand is finished and acked, the
rest of its batch released. A progress line (a bar with --limit) is shown on stderr when it is
a terminal, or with --progress.`,
		Example: `  queenctl consume orders --concurrency 4 --idle 2s
  queenctl consume orders --group billing --mode all --limit 100`,
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
	}
	sf.register(cmd.Flags())
	cmd.Flags().BoolVar(&autoAck, "auto-ack", false, "consume on delivery instead of acking after printing (at most once)")
	cmd.RunE = a.run(func(args []string) int {
		q := a.c.Queue(args[0]).Partition(sf.partition)
		if err := sf.check(); err != nil {
			return a.usageError("%v", err)
		}
		o := sf.options()
		o.AutoAck = autoAck
		return a.stream(q, o)
	})
	return cmd
}

// tailCmd follows a queue like tail -f: it reads in a consumer group of its own, so workers
// of the queue lose nothing, starting from now by default. An unnamed group is temporary and
// deleted on exit, so it does not keep messages "unconsumed" on the broker.
func (a *app) tailCmd() *cobra.Command {
	var sf streamFlags
	cmd := &cobra.Command{
		Use:   "tail QUEUE",
		Short: "Follow new messages in an observer group, without taking them from workers",
		Example: `  queenctl tail orders                 # from now on, until Ctrl-C
  queenctl tail orders --from all --limit 10 --idle 2s`,
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
	}
	sf.register(cmd.Flags())
	cmd.RunE = a.run(func(args []string) int {
		switch sf.from {
		case "all", "beginning":
			sf.mode, sf.from = string(queen.SubscriptionAll), ""
		case "":
			if sf.mode == "" {
				sf.from = queen.FromNow
			}
		}
		temporary := sf.group == ""
		if temporary {
			var b [4]byte
			_, _ = rand.Read(b[:])
			sf.group = "queenctl-tail-" + hex.EncodeToString(b[:])
		}
		if err := sf.check(); err != nil {
			return a.usageError("%v (tail also takes --from all)", err)
		}
		q := a.c.Queue(args[0]).Partition(sf.partition)
		o := sf.options()
		o.AutoAck = true // an observer: its own group, nothing to settle
		code := a.stream(q, o)
		if temporary {
			// The run may have ended by a signal: clean up on a context of its own.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 5*time.Second)
			defer cancel()
			if err := q.DeleteConsumerGroup(ctx, sf.group); err != nil && !errors.Is(err, queen.ErrUnsupported) {
				fmt.Fprintf(a.stderr, "queenctl tail: could not delete temporary group %s: %v\n", sf.group, err)
			}
		}
		return code
	})
	return cmd
}

// stream runs a consumer that prints each message as a JSON line.
func (a *app) stream(q queen.Queue, o queen.ConsumeOptions) int {
	ctx, stop := context.WithCancel(a.ctx)
	defer stop()
	var mu sync.Mutex
	var n atomic.Int64
	r := a.startProgress("messages", int64(o.Limit))
	o.OnError = func(err error) {
		var ce *queen.ConsumeError
		if errors.As(err, &ce) && ce.Op == "handle" {
			return // the printing failure is reported once, below
		}
		fmt.Fprintf(a.stderr, "queenctl %s: %v\n", a.name, err)
	}
	var writeErr error
	err := q.Consume(ctx, func(_ context.Context, m *queen.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if writeErr != nil {
			return queen.AckAs(queen.AckRetry, writeErr)
		}
		if err := a.record(m); err != nil { // JSON lines, or YAML documents with -o yaml
			// Nobody reads stdout any more (a closed pipe): hand the message back and stop.
			writeErr = err
			stop()
			return queen.AckAs(queen.AckRetry, err)
		}
		n.Add(1)
		r.add(1)
		return nil
	}, o)
	r.finish()
	switch {
	case err != nil:
		return a.fail(err)
	case writeErr != nil:
		fmt.Fprintf(a.stderr, "queenctl %s: writing output: %v\n", a.name, writeErr)
		return exitFailure
	case n.Load() == 0:
		fmt.Fprintf(a.stderr, "queenctl %s: no message\n", a.name)
		return exitNotFound
	}
	return exitOK
}
