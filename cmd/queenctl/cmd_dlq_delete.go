package main

import (
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// dlqDeleteCmd is `queenctl dlq delete`: dead-letter entries removed by id or by filter
// (POST /api/v1/dlq/delete, docs/api/admin-api.md §3.3).
func (a *app) dlqDeleteCmd() *cobra.Command {
	var sel dlqSelect
	cmd := &cobra.Command{
		Use:   "delete [DLQ_ID...]",
		Short: "Delete dead-letter entries (by entry id or by filter)",
		Long: `Delete dead-letter entries, named by their DLQ ids (field dlqId of 'queenctl dlq -o json')
or selected by filter flags, oldest first, up to --limit. Only the entries go: a message still
stored stays as it is (and stays skipped for a group it was moved to the DLQ for); delete it
with 'queenctl messages delete'. Repeating the command is safe. By filter, repeat until
REMAINING is 0.`,
		Example: `  queenctl dlq delete 0198f2c1-aaaa-7000-8000-000000000001
  queenctl dlq delete --queue orders --error "Retries exhausted"
  queenctl dlq delete --all`,
		Args: nargs(0, -1),
		RunE: a.run(func(args []string) int {
			d, code := sel.resolve(a, "delete", args)
			if code != 0 {
				return code
			}
			res, err := a.c.DeleteDLQ(a.ctx, d)
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{}
			for _, k := range res.Skipped {
				rows = append(rows, []string{k.ID, "skipped", k.Reason})
			}
			rows = append(rows, []string{"", "deleted", strconv.Itoa(res.Deleted) + ", remaining " + strconv.Itoa(res.Remaining)})
			return a.print(res, []string{"DLQ_ID", "RESULT", "DETAIL"}, rows)
		}),
	}
	sel.register(cmd)
	return cmd
}

// dlqSelect is the entry selection of `dlq delete` and `dlq requeue`: DLQ ids as arguments, or
// filter flags, or --all, with --limit.
type dlqSelect struct {
	sel          queen.DLQSelection
	since, until duration
	all          bool
}

// register adds the selection flags to cmd.
func (s *dlqSelect) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.sel.Queue, "queue", "", "entries of this queue")
	f.StringVar(&s.sel.ConsumerGroup, "group", "", "entries of this consumer group (__QUEUE_MODE__ for queue mode)")
	f.StringVar(&s.sel.Partition, "partition", "", "entries of this partition")
	f.StringVar(&s.sel.Error, "error", "", "entries with exactly this reason, e.g. \"Retries exhausted\"")
	f.Var(&s.since, "since", "entries dead-lettered within this long (e.g. 1h)")
	f.Var(&s.until, "until", "entries dead-lettered at least this long ago")
	f.BoolVar(&s.all, "all", false, "every entry (up to --limit)")
	f.IntVar(&s.sel.Limit, "limit", 0, "by filter: at most this many entries (default and maximum 1000)")
}

// resolve checks the selection against args and returns it, or a usage error's exit code.
func (s *dlqSelect) resolve(a *app, verb string, args []string) (queen.DLQSelection, int) {
	d := s.sel
	filtered := d.Queue != "" || d.ConsumerGroup != "" || d.Partition != "" || d.Error != "" || s.since > 0 || s.until > 0
	switch {
	case len(args) > 0 && (filtered || s.all):
		return d, a.usageError("give DLQ ids or filter flags, not both")
	case len(args) == 0 && !filtered && !s.all:
		return d, a.usageError("%s needs DLQ ids, filter flags (--queue, --group, --partition, --error, --since, --until) or --all", verb)
	case d.Limit < 0 || d.Limit > 1000:
		return d, a.usageError("--limit must be between 1 and 1000")
	}
	if len(args) > 0 {
		d.IDs = args
	}
	if s.since > 0 {
		d.From = time.Now().Add(-time.Duration(s.since))
	}
	if s.until > 0 {
		d.To = time.Now().Add(-time.Duration(s.until))
	}
	return d, 0
}
