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
	var d queen.DLQDelete
	var since, until duration
	var all bool
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
			filtered := d.Queue != "" || d.ConsumerGroup != "" || d.Partition != "" || d.Error != "" || since > 0 || until > 0
			switch {
			case len(args) > 0 && (filtered || all):
				return a.usageError("give DLQ ids or filter flags, not both")
			case len(args) == 0 && !filtered && !all:
				return a.usageError("delete needs DLQ ids, filter flags (--queue, --group, --partition, --error, --since, --until) or --all")
			case d.Limit < 0 || d.Limit > 1000:
				return a.usageError("--limit must be between 1 and 1000")
			}
			if len(args) > 0 {
				d.IDs = args
			}
			if since > 0 {
				d.From = time.Now().Add(-time.Duration(since))
			}
			if until > 0 {
				d.To = time.Now().Add(-time.Duration(until))
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
	f := cmd.Flags()
	f.StringVar(&d.Queue, "queue", "", "entries of this queue")
	f.StringVar(&d.ConsumerGroup, "group", "", "entries of this consumer group (__QUEUE_MODE__ for queue mode)")
	f.StringVar(&d.Partition, "partition", "", "entries of this partition")
	f.StringVar(&d.Error, "error", "", "entries with exactly this reason, e.g. \"Retries exhausted\"")
	f.Var(&since, "since", "entries dead-lettered within this long (e.g. 1h)")
	f.Var(&until, "until", "entries dead-lettered at least this long ago")
	f.BoolVar(&all, "all", false, "every entry (up to --limit)")
	f.IntVar(&d.Limit, "limit", 0, "by filter: at most this many entries (default and maximum 1000)")
	return cmd
}
