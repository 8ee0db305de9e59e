package main

import (
	"strconv"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// dlqRequeueCmd is `queenctl dlq requeue`: dead-lettered entries back to the consumer group
// that gave up on them, or copied into a queue (POST /api/v1/dlq/requeue).
func (a *app) dlqRequeueCmd() *cobra.Command {
	var sel dlqSelect
	var r queen.DLQRequeue
	cmd := &cobra.Command{
		Use:   "requeue [DLQ_ID...]",
		Short: "Give dead-lettered messages another chance (by entry id or by filter)",
		Long: `Requeue dead-lettered entries, named by their DLQ ids (the DLQ_ID column of
'queenctl dlq -o json', field dlqId) or selected by filter flags, oldest first, up to --limit.

Without --copy-to each message goes back to the consumer group that dead-lettered it, and to
no other group; a message that group already consumed is delivered to it again before anything
new. With --copy-to the entries' payloads are pushed as new messages into that queue (every
group of it sees them). Either way a requeued entry leaves the DLQ, so repeating the command is
safe. By filter, repeat until REMAINING is 0.`,
		Example: `  queenctl dlq requeue 0198f2c1-aaaa-7000-8000-000000000001
  queenctl dlq requeue --queue orders --group billing --error "Retries exhausted"
  queenctl dlq requeue --queue orders --copy-to orders.replay`,
		Args: nargs(0, -1),
		RunE: a.run(func(args []string) int {
			if r.ToPartition != "" && r.ToQueue == "" {
				return a.usageError("--to-partition needs --copy-to")
			}
			var code int
			if r.DLQSelection, code = sel.resolve(a, "requeue", args); code != 0 {
				return code
			}
			res, err := a.c.RequeueDLQ(a.ctx, r)
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{}
			for _, c := range res.Copies {
				rows = append(rows, []string{c.DLQID, "copied", c.QueueName + " " + c.MessageID})
			}
			for _, k := range res.Skipped {
				rows = append(rows, []string{k.ID, "skipped", k.Reason})
			}
			rows = append(rows, []string{"", res.Mode, "requeued " + strconv.Itoa(res.Requeued) + ", remaining " + strconv.Itoa(res.Remaining)})
			return a.print(res, []string{"DLQ_ID", "RESULT", "DETAIL"}, rows)
		}),
	}
	sel.register(cmd)
	f := cmd.Flags()
	f.StringVar(&r.ToQueue, "copy-to", "", "copy the payloads as new messages into this queue instead")
	f.StringVar(&r.ToPartition, "to-partition", "", "with --copy-to: this partition (default: each entry's own)")
	return cmd
}

// messagesRetryCmd is `queenctl messages retry`: a dead-lettered or failed message made
// deliverable again (POST /api/v1/messages/:partitionId/:transactionId/retry). Exit 3 when the
// message does not exist or there was nothing to retry.
func (a *app) messagesRetryCmd() *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use:   "retry PARTITION_ID TRANSACTION_ID",
		Short: "Redeliver a dead-lettered message, or end a failed one's retry delay (exit 3 when nothing to do)",
		Args:  nargs(2, 2),
		RunE: a.run(func(args []string) int {
			res, err := a.c.RetryMessage(a.ctx, args[0], args[1], group)
			if err != nil {
				return a.fail(err)
			}
			rows := [][]string{}
			for _, g := range res.ConsumerGroups {
				rows = append(rows, []string{g.ConsumerGroup, g.Action})
			}
			for _, k := range res.Skipped {
				rows = append(rows, []string{k.ConsumerGroup, "skipped: " + k.Reason})
			}
			if res.Error != "" {
				rows = append(rows, []string{"", res.Error})
			}
			if code := a.print(res, []string{"GROUP", "ACTION"}, rows); code != exitOK {
				return code
			}
			if !res.Success {
				return exitNotFound
			}
			return exitOK
		}),
	}
	cmd.Flags().StringVar(&group, "group", "", "only this consumer group (default: every group)")
	return cmd
}
