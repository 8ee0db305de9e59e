package main

import (
	"fmt"
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// healthCmd checks the broker: exit 0 when healthy, 1 otherwise.
func (a *app) healthCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Check the broker (exit 1 when unhealthy or unreachable)",
		Args:  nargs(0, 0),
		RunE: a.run(func([]string) int {
			h, err := a.c.Health(a.ctx)
			if h.Status != "" {
				row := []string{h.Status, h.Database, h.Server, h.Version, h.WorkerID}
				if perr := a.show(h, []string{"STATUS", "DATABASE", "SERVER", "VERSION", "WORKER"}, [][]string{row}); perr != nil {
					return a.fail(perr)
				}
			}
			if err != nil {
				return a.fail(err)
			}
			return exitOK
		}),
	}
}

// dlqCmd lists dead-lettered messages, newest first, and requeues them (dlqRequeueCmd).
func (a *app) dlqCmd() *cobra.Command {
	var f queen.DLQQuery
	var since, until duration
	run := a.run(func(args []string) int {
		if f.Limit < 1 || f.Offset < 0 {
			return a.usageError("--limit must be at least 1 and --offset not negative")
		}
		if since > 0 {
			f.From = time.Now().Add(-time.Duration(since))
		}
		if until > 0 {
			f.To = time.Now().Add(-time.Duration(until))
		}
		q := ""
		if len(args) > 0 {
			q = args[0]
		}
		page, err := a.c.Queue(q).DLQ(a.ctx, f)
		if err != nil {
			return a.fail(err)
		}
		rows := make([][]string, len(page.Messages))
		for i, e := range page.Messages {
			rows[i] = []string{e.FailedAt.Format(time.RFC3339), e.Queue, e.Partition, e.ConsumerGroup, e.TransactionID,
				strconv.Itoa(e.RetryCount), e.ErrorMessage, truncate(string(e.Data), 40)}
		}
		return a.print(page, []string{"FAILED_AT", "QUEUE", "PARTITION", "GROUP", "TRANSACTION_ID", "RETRIES", "REASON", "DATA"}, rows)
	})
	flags := func(c *cobra.Command) *cobra.Command {
		fs := c.Flags()
		fs.StringVar(&f.ConsumerGroup, "group", "", "only this consumer group (__QUEUE_MODE__ for queue mode)")
		fs.StringVar(&f.Partition, "partition", "", "only this partition")
		fs.IntVar(&f.Limit, "limit", 100, "page size (at most 1000)")
		fs.IntVar(&f.Offset, "offset", 0, "entries to skip")
		fs.Var(&since, "since", "only entries dead-lettered within this long (e.g. 1h)")
		fs.Var(&until, "until", "only entries dead-lettered at least this long ago")
		return c
	}
	cmd := flags(&cobra.Command{
		Use:   "dlq [QUEUE]",
		Short: "List dead-lettered messages (all queues without QUEUE)",
		Long: `List dead-lettered messages, newest first ('dlq QUEUE' and 'dlq list QUEUE' are the same).
'queenctl dlq requeue' gives entries another chance; 'queenctl messages delete' removes a
message itself.`,
		Args:              nargs(0, 1),
		ValidArgsFunction: a.completeQueues,
		RunE:              run,
	})
	cmd.AddCommand(flags(&cobra.Command{
		Use:               "list [QUEUE]",
		Aliases:           []string{"ls"},
		Short:             "List dead-lettered messages",
		Args:              nargs(0, 1),
		ValidArgsFunction: a.completeQueues,
		RunE:              run,
	}), a.dlqRequeueCmd())
	return cmd
}

// seekFlags are the flags of a seek.
type seekFlags struct {
	group, partition, to string
	toEnd                bool
}

// seekCommand builds `seek QUEUE` (top level) and `groups seek QUEUE`.
func (a *app) seekCommand(use string) *cobra.Command {
	var s seekFlags
	cmd := &cobra.Command{
		Use:               use + " QUEUE",
		Short:             "Move a consumer group's cursor to the end, or back to a point in time",
		Example:           "  queenctl " + use + " orders --group billing --to 2026-04-26T10:00:00Z\n  queenctl " + use + " orders --group billing --to-end",
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
	}
	f := cmd.Flags()
	f.StringVar(&s.group, "group", "", "consumer group to move (required)")
	f.StringVar(&s.partition, "partition", "", "only this partition (to the end only)")
	f.BoolVar(&s.toEnd, "to-end", false, "skip everything stored so far")
	f.StringVar(&s.to, "to", "", "replay from this RFC 3339 timestamp")
	cmd.RunE = a.run(func(args []string) int {
		q := a.c.Queue(args[0]).Partition(s.partition)
		if s.group == "" {
			return a.usageError("seek needs --group")
		}
		var target queen.SeekTarget
		switch {
		case s.toEnd == (s.to != ""):
			return a.usageError("give exactly one of --to-end and --to TIMESTAMP")
		case s.toEnd:
			target = queen.SeekEnd
		default:
			t, err := time.Parse(time.RFC3339Nano, s.to)
			if err != nil {
				return a.usageError("invalid --to %q: want an RFC 3339 timestamp such as 2026-04-26T10:00:00Z", s.to)
			}
			if s.partition != "" {
				return a.usageError("a partition can only be sought --to-end")
			}
			target = queen.SeekTime(t)
		}
		res, err := q.Seek(a.ctx, s.group, target)
		if err != nil {
			return a.fail(err)
		}
		row := []string{res.ConsumerGroup, res.Queue, res.Partition, strconv.Itoa(res.PartitionsUpdated)}
		return a.print(res, []string{"GROUP", "QUEUE", "PARTITION", "PARTITIONS_UPDATED"}, [][]string{row})
	})
	return cmd
}

// replayCmd is Queen's `replay`: move a group back to a point in time, so it reads again
// every message created since.
func (a *app) replayCmd() *cobra.Command {
	var group, from string
	cmd := &cobra.Command{
		Use:               "replay QUEUE",
		Short:             "Replay a queue for a consumer group from a point in time (seek --to)",
		Example:           "  queenctl replay orders --group billing --from 2026-04-26T10:00:00Z",
		Args:              nargs(1, 1),
		ValidArgsFunction: a.completeQueues,
	}
	cmd.Flags().StringVar(&group, "group", "", "consumer group to rewind (required)")
	cmd.Flags().StringVar(&from, "from", "", "RFC 3339 timestamp to replay from (required)")
	cmd.RunE = a.run(func(args []string) int {
		if group == "" || from == "" {
			return a.usageError("replay needs --group and --from TIMESTAMP")
		}
		t, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return a.usageError("invalid --from %q: want an RFC 3339 timestamp such as 2026-04-26T10:00:00Z", from)
		}
		res, err := a.c.Queue(args[0]).Seek(a.ctx, group, queen.SeekTime(t))
		if err != nil {
			return a.fail(err)
		}
		row := []string{res.ConsumerGroup, res.Queue, strconv.Itoa(res.PartitionsUpdated)}
		return a.print(res, []string{"GROUP", "QUEUE", "PARTITIONS_UPDATED"}, [][]string{row})
	})
	return cmd
}

// seekCmd is the top-level `seek`, kept from before `groups seek`.
func (a *app) seekCmd() *cobra.Command { return a.seekCommand("seek") }

// lagCommand builds `lag` (top level) and `groups lag`: the lagging (group, partition)
// pairs, like Queen's own queenctl lag.
func (a *app) lagCommand() *cobra.Command {
	var minLag duration
	var group string
	var all bool
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Show consumer-group lag per partition (messages behind, age of the oldest unconsumed)",
		Long: `Show, for each consumer group and partition that is behind, how many messages it has not
consumed and how old the oldest of them is, most lagging first (--all adds the pairs that are
not behind).`,
		Example: `  queenctl lag
  queenctl lag --min-lag 1h --group billing`,
		Args: nargs(0, 0),
	}
	cmd.Flags().Var(&minLag, "min-lag", "only pairs whose oldest unconsumed message is at least this old (default 0: every pair)")
	cmd.Flags().StringVar(&group, "group", "", "only this consumer group")
	cmd.Flags().BoolVar(&all, "all", false, "also the pairs that are not behind")
	cmd.RunE = a.run(func([]string) int {
		pairs, err := a.c.LaggingGroups(a.ctx, time.Duration(minLag))
		if err != nil {
			return a.fail(err)
		}
		out := []queen.GroupLag{}
		var rows [][]string
		for _, p := range pairs {
			if (group != "" && p.ConsumerGroup != group) || (p.OffsetLag == 0 && !all) {
				continue
			}
			out = append(out, p)
			rows = append(rows, []string{p.ConsumerGroup, p.Queue, p.Partition, strconv.Itoa(p.OffsetLag),
				(time.Duration(p.TimeLagSeconds) * time.Second).String(), ts(p.OldestUnconsumedAt), ts(p.LastConsumedAt)})
		}
		return a.print(out, []string{"GROUP", "QUEUE", "PARTITION", "LAG", "TIME_LAG", "OLDEST_UNCONSUMED", "LAST_CONSUMED"}, rows)
	})
	return cmd
}

// lagCmd is the top-level `lag`.
func (a *app) lagCmd() *cobra.Command { return a.lagCommand() }

// groupsCmd is `queenctl groups`: consumer groups.
func (a *app) groupsCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "groups",
		Aliases: []string{"group", "consumer-groups"},
		Short:   "List, inspect, seek and delete consumer groups",
		Example: `  queenctl groups list
  queenctl groups get billing
  queenctl groups lag
  queenctl groups seek orders --group billing --to-end
  queenctl groups delete billing [--queue orders]`,
	})
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups with their lag, one row per group and queue",
		Args:    nargs(0, 0),
		RunE: a.run(func([]string) int {
			gs, err := a.c.ConsumerGroups(a.ctx)
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(gs))
			for i, g := range gs {
				rows[i] = []string{g.Name, g.Queue, g.State, strconv.Itoa(g.Members), strconv.Itoa(g.PartitionsWithLag),
					strconv.Itoa(g.TotalLag), (time.Duration(g.MaxTimeLag) * time.Second).String(), g.SubscriptionMode}
			}
			return a.print(gs, []string{"GROUP", "QUEUE", "STATE", "MEMBERS", "PARTITIONS_WITH_LAG", "LAG", "MAX_TIME_LAG", "MODE"}, rows)
		}),
	}
	get := &cobra.Command{
		Use:     "get GROUP",
		Aliases: []string{"describe"},
		Short:   "Show a consumer group's cursor on every partition it reads",
		Args:    nargs(1, 1),
		RunE: a.run(func(args []string) int {
			ps, err := a.c.ConsumerGroupDetail(a.ctx, args[0])
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(ps))
			for i, p := range ps {
				rows[i] = []string{p.Queue, p.Partition, strconv.Itoa(p.TotalConsumed), strconv.Itoa(p.OffsetLag),
					(time.Duration(p.TimeLagSeconds) * time.Second).String(), strconv.FormatBool(p.LeaseActive), ts(p.LastConsumedAt)}
			}
			return a.print(ps, []string{"QUEUE", "PARTITION", "CONSUMED", "LAG", "TIME_LAG", "LEASED", "LAST_CONSUMED"}, rows)
		}),
	}
	var queue string
	del := &cobra.Command{
		Use:     "delete GROUP",
		Aliases: []string{"rm"},
		Short:   "Delete a consumer group's cursors, leases and subscription (on every queue, or --queue)",
		Args:    nargs(1, 1),
		RunE: a.run(func(args []string) int {
			out := struct {
				ConsumerGroup     string `json:"consumerGroup"`
				Queue             string `json:"queue,omitempty"`
				DeletedPartitions int    `json:"deletedPartitions"`
			}{ConsumerGroup: args[0], Queue: queue, DeletedPartitions: -1}
			var err error
			if queue != "" {
				err = a.c.Queue(queue).DeleteConsumerGroup(a.ctx, args[0])
			} else {
				out.DeletedPartitions, err = a.c.DeleteConsumerGroup(a.ctx, args[0])
			}
			if err != nil {
				return a.fail(err)
			}
			n := "-"
			if out.DeletedPartitions >= 0 {
				n = strconv.Itoa(out.DeletedPartitions)
			}
			return a.print(out, []string{"GROUP", "QUEUE", "DELETED_PARTITIONS"}, [][]string{{out.ConsumerGroup, out.Queue, n}})
		}),
	}
	del.Flags().StringVar(&queue, "queue", "", "only on this queue")
	cmd.AddCommand(list, get, a.lagCommand(), a.seekCommand("seek"), del)
	return cmd
}

// messagesCmd is `queenctl messages`: browse and delete stored messages.
func (a *app) messagesCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "messages",
		Aliases: []string{"message", "msg"},
		Short:   "List, show, retry and delete stored messages",
		Example: `  queenctl messages list --queue orders --status pending
  queenctl messages get PARTITION_ID TRANSACTION_ID
  queenctl messages delete PARTITION_ID TRANSACTION_ID
  queenctl messages retry PARTITION_ID TRANSACTION_ID --group billing`,
	})
	var f queen.MessageQuery
	var since duration
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List stored messages, newest first (the last hour unless --since)",
		Args:    nargs(0, 0),
		RunE: a.run(func([]string) int {
			switch f.Status {
			case "", "pending", "processing", "completed", "dead_letter":
			default:
				return a.usageError("invalid --status %q: want pending, processing, completed or dead_letter", f.Status)
			}
			if since > 0 {
				f.From = time.Now().Add(-time.Duration(since))
			}
			ms, err := a.c.Messages(a.ctx, f)
			if err != nil {
				return a.fail(err)
			}
			if ms == nil {
				ms = []queen.StoredMessage{}
			}
			rows := make([][]string, len(ms))
			for i, m := range ms {
				rows[i] = []string{ts(m.CreatedAt), m.Queue, m.Partition, m.PartitionID, m.TransactionID, m.Status}
			}
			return a.print(ms, []string{"CREATED_AT", "QUEUE", "PARTITION", "PARTITION_ID", "TRANSACTION_ID", "STATUS"}, rows)
		}),
	}
	lf := list.Flags()
	lf.StringVar(&f.Queue, "queue", "", "only this queue")
	lf.StringVar(&f.Partition, "partition", "", "only this partition")
	lf.StringVar(&f.Namespace, "namespace", "", "only queues of this namespace")
	lf.StringVar(&f.Task, "task", "", "only queues of this task")
	lf.StringVar(&f.Status, "status", "", "pending, processing, completed or dead_letter")
	lf.IntVar(&f.Limit, "limit", 200, "page size (at most 1000)")
	lf.IntVar(&f.Offset, "offset", 0, "messages to skip")
	lf.Var(&since, "since", "messages created within this long (default: the last hour)")
	get := &cobra.Command{
		Use:   "get PARTITION_ID TRANSACTION_ID",
		Short: "Show one message with its payload and consumers",
		Args:  nargs(2, 2),
		RunE: a.run(func(args []string) int {
			m, err := a.c.Message(a.ctx, args[0], args[1])
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{
				{"transactionId", m.TransactionID}, {"partitionId", m.PartitionID}, {"queue", m.Queue},
				{"partition", m.Partition}, {"status", m.Status}, {"createdAt", ts(m.CreatedAt)},
				{"retryCount", strconv.Itoa(m.RetryCount)}, {"errorMessage", m.ErrorMessage},
				{"payload", truncate(string(m.Payload), 200)},
			}
			for _, c := range m.ConsumerGroups {
				rows = append(rows, []string{"consumer " + c.Name, fmt.Sprintf("consumed=%t", c.Consumed)})
			}
			return a.print(m, []string{"FIELD", "VALUE"}, rows)
		}),
	}
	del := &cobra.Command{
		Use:     "delete PARTITION_ID TRANSACTION_ID",
		Aliases: []string{"rm"},
		Short:   "Delete one message (exit 3 when it did not exist)",
		Args:    nargs(2, 2),
		RunE: a.run(func(args []string) int {
			found, err := a.c.DeleteMessage(a.ctx, args[0], args[1])
			if err != nil {
				return a.fail(err)
			}
			out := struct {
				PartitionID   string `json:"partitionId"`
				TransactionID string `json:"transactionId"`
				Deleted       bool   `json:"deleted"`
			}{args[0], args[1], found}
			if code := a.print(out, []string{"PARTITION_ID", "TRANSACTION_ID", "DELETED"}, [][]string{{args[0], args[1], strconv.FormatBool(found)}}); code != exitOK {
				return code
			}
			if !found {
				return exitNotFound
			}
			return exitOK
		}),
	}
	cmd.AddCommand(list, get, del, a.messagesRetryCmd())
	return cmd
}

// tracesCmd is `queenctl traces`: the trace events recorded on messages.
func (a *app) tracesCmd() *cobra.Command {
	cmd := parent(&cobra.Command{
		Use:     "traces",
		Aliases: []string{"trace"},
		Short:   "Show the traces recorded on messages",
		Example: `  queenctl traces get PARTITION_ID TRANSACTION_ID
  queenctl traces by-name order-8891
  queenctl traces names`,
	})
	header := []string{"CREATED_AT", "EVENT", "GROUP", "WORKER", "NAMES", "DATA"}
	row := func(t queen.Trace) []string {
		return []string{ts(t.CreatedAt), t.EventType, t.ConsumerGroup, t.WorkerID, fmt.Sprint(t.TraceNames), truncate(string(t.Data), 60)}
	}
	get := &cobra.Command{
		Use:   "get PARTITION_ID TRANSACTION_ID",
		Short: "List one message's traces, oldest first",
		Args:  nargs(2, 2),
		RunE: a.run(func(args []string) int {
			tr, err := a.c.MessageTraces(a.ctx, args[0], args[1])
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(tr))
			for i, t := range tr {
				rows[i] = row(t)
			}
			return a.print(tr, header, rows)
		}),
	}
	var limit, offset int
	byName := &cobra.Command{
		Use:   "by-name NAME",
		Short: "List the traces carrying a name",
		Args:  nargs(1, 1),
		RunE: a.run(func(args []string) int {
			p, err := a.c.TracesByName(a.ctx, args[0], limit, offset)
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(p.Traces))
			for i, t := range p.Traces {
				rows[i] = append([]string{t.Queue, t.TransactionID}, row(t)...)
			}
			return a.print(p, append([]string{"QUEUE", "TRANSACTION_ID"}, header...), rows)
		}),
	}
	byName.Flags().IntVar(&limit, "limit", 0, "page size (default: the broker's)")
	byName.Flags().IntVar(&offset, "offset", 0, "traces to skip")
	names := &cobra.Command{
		Use:   "names",
		Short: "List the trace names in use",
		Args:  nargs(0, 0),
		RunE: a.run(func([]string) int {
			p, err := a.c.TraceNames(a.ctx, limit, offset)
			if err != nil {
				return a.fail(err)
			}
			rows := make([][]string, len(p.Names))
			for i, n := range p.Names {
				rows[i] = []string{n.Name, strconv.Itoa(n.TraceCount), strconv.Itoa(n.MessageCount), ts(n.LastSeen)}
			}
			return a.print(p, []string{"NAME", "TRACES", "MESSAGES", "LAST_SEEN"}, rows)
		}),
	}
	names.Flags().IntVar(&limit, "limit", 0, "page size (default: the broker's)")
	names.Flags().IntVar(&offset, "offset", 0, "names to skip")
	cmd.AddCommand(get, byName, names)
	return cmd
}

// statusCmd is `queenctl status`: the broker's summary over a window.
func (a *app) statusCmd() *cobra.Command {
	window := duration(time.Hour)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the broker's summary: message counts, leases, DLQ, queues, workers",
		Args:  nargs(0, 0),
	}
	cmd.Flags().Var(&window, "window", "the window that ends now")
	cmd.RunE = a.run(func([]string) int {
		s, err := a.c.Status(a.ctx, time.Duration(window))
		if err != nil {
			return a.fail(err)
		}
		age := "never"
		if s.StatsAge != nil {
			age = (time.Duration(*s.StatsAge) * time.Second).String()
		}
		m := s.Messages
		rows := [][]string{
			{"messages", fmt.Sprintf("%d total, %d pending, %d processing, %d completed, %d dead-lettered",
				m.Total, m.Pending, m.Processing, m.Completed, m.DeadLetter)},
			{"leases", fmt.Sprintf("%d active on %d partitions", s.Leases.Active, s.Leases.PartitionsWithLeases)},
			{"dlq", fmt.Sprintf("%d messages on %d partitions", s.DeadLetterQueue.TotalMessages, s.DeadLetterQueue.AffectedPartitions)},
			{"queues", strconv.Itoa(len(s.Queues))},
			{"workers", strconv.Itoa(len(s.Workers))},
			{"stats age", age},
		}
		return a.print(s, []string{"ITEM", "VALUE"}, rows)
	})
	return cmd
}
