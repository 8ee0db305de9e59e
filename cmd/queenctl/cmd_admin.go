package main

import (
	"strconv"
	"time"

	queen "github.com/queen-go/queen/client"
)

// cmdHealth checks the broker: exit 0 when healthy, 1 otherwise.
func cmdHealth(a *app, args []string) int {
	fs := a.commandFlags()
	if code, ok := a.parseCmd(fs, args, 0, 0); !ok {
		return code
	}
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
}

// cmdDLQ lists dead-lettered messages, newest first.
func cmdDLQ(a *app, args []string) int {
	fs := a.commandFlags()
	var f queen.DLQQuery
	fs.StringVar(&f.ConsumerGroup, "group", "", "only this consumer group (__QUEUE_MODE__ for queue mode)")
	fs.StringVar(&f.Partition, "partition", "", "only this partition")
	fs.IntVar(&f.Limit, "limit", 100, "page size (at most 1000)")
	fs.IntVar(&f.Offset, "offset", 0, "entries to skip")
	var from, to duration
	fs.Var(&from, "since", "only entries dead-lettered within this long (e.g. 1h)")
	fs.Var(&to, "until", "only entries dead-lettered at least this long ago")
	if code, ok := a.parseCmd(fs, args, 0, 1); !ok {
		return code
	}
	if f.Limit < 1 || f.Offset < 0 {
		return a.usageError("--limit must be at least 1 and --offset not negative")
	}
	if from > 0 {
		f.From = time.Now().Add(-time.Duration(from))
	}
	if to > 0 {
		f.To = time.Now().Add(-time.Duration(to))
	}
	page, err := a.c.Queue(fs.Arg(0)).DLQ(a.ctx, f)
	if err != nil {
		return a.fail(err)
	}
	rows := make([][]string, len(page.Messages))
	for i, e := range page.Messages {
		rows[i] = []string{e.FailedAt.Format(time.RFC3339), e.Queue, e.Partition, e.ConsumerGroup, e.TransactionID,
			strconv.Itoa(e.RetryCount), e.ErrorMessage, truncate(string(e.Data), 40)}
	}
	if err := a.show(page, []string{"FAILED_AT", "QUEUE", "PARTITION", "GROUP", "TRANSACTION_ID", "RETRIES", "REASON", "DATA"}, rows); err != nil {
		return a.fail(err)
	}
	return exitOK
}

// cmdSeek moves a consumer group's cursor to the end, or back to a point in time.
func cmdSeek(a *app, args []string) int {
	fs := a.commandFlags()
	group := fs.String("group", "", "consumer group to move (required)")
	partition := fs.String("partition", "", "only this partition (to the end only)")
	toEnd := fs.Bool("to-end", false, "skip everything stored so far")
	to := fs.String("to", "", "replay from this RFC 3339 timestamp")
	if code, ok := a.parseCmd(fs, args, 1, 1); !ok {
		return code
	}
	q := a.c.Queue(fs.Arg(0)).Partition(*partition)
	if *group == "" {
		return a.usageError("seek needs --group")
	}
	var target queen.SeekTarget
	switch {
	case *toEnd == (*to != ""):
		return a.usageError("give exactly one of --to-end and --to TIMESTAMP")
	case *toEnd:
		target = queen.SeekEnd
	default:
		t, err := time.Parse(time.RFC3339Nano, *to)
		if err != nil {
			return a.usageError("invalid --to %q: want an RFC 3339 timestamp such as 2026-04-26T10:00:00Z", *to)
		}
		if *partition != "" {
			return a.usageError("a partition can only be sought --to-end")
		}
		target = queen.SeekTime(t)
	}
	res, err := q.Seek(a.ctx, *group, target)
	if err != nil {
		return a.fail(err)
	}
	row := []string{res.ConsumerGroup, res.Queue, res.Partition, strconv.Itoa(res.PartitionsUpdated)}
	if err := a.show(res, []string{"GROUP", "QUEUE", "PARTITION", "PARTITIONS_UPDATED"}, [][]string{row}); err != nil {
		return a.fail(err)
	}
	return exitOK
}
