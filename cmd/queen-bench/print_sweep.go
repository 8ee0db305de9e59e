package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/queen-go/queen/internal/bench"
)

// printSweep prints the sweep scenario's steps and ratios.
func printSweep(w io.Writer, r bench.Result) {
	if len(r.Sweep) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "partitions\tpush msgs/s\tp50 ms\tp99 ms\terrors\tfirst pop ms\tpop+ack msgs/s\tp50 ms\tp99 ms\terrors\t")
	for _, s := range r.Sweep {
		p, q := s.Push, s.Pop
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%d\t%s\t%.0f\t%s\t%s\t%d\t\n", s.Partitions,
			p.MsgsPerSec, msText(p.P50), msText(p.P99), p.Errors, msText(s.Register), q.MsgsPerSec, msText(q.P50), msText(q.P99), q.Errors)
	}
	tw.Flush()
	for _, x := range r.SweepRatios {
		fmt.Fprintf(w, "%d ÷ %d partitions: push %.0f%%, pop+ack %.0f%%\n", x.Partitions, x.Of, x.Push*100, x.Pop*100)
	}
}

// printSteady prints the steady scenario's windows.
func printSteady(w io.Writer, r bench.Result) {
	if len(r.Steady) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	var tables []string
	for _, t := range r.Steady[0].Tables {
		tables = append(tables, t.Table)
	}
	fmt.Fprint(tw, "window\tend\tpush/s\tp50 ms\tp99 ms\tack/s\tp50 ms\tp99 ms\tbacklog\tmessage rows\toldest\tdb MB\t")
	for _, t := range tables {
		fmt.Fprintf(tw, "dead %s\t", t)
	}
	fmt.Fprintln(tw, "errors\t")
	var end time.Duration
	for _, x := range r.Steady {
		end += x.Elapsed
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%d\t%d\t%s\t%.0f\t", x.Window, end.Round(time.Second),
			x.PushPerSec, msText(x.PushP50), msText(x.PushP99), x.AckPerSec, msText(x.AckP50), msText(x.AckP99),
			x.Backlog, x.MessageRows, x.OldestAge.Round(time.Second), float64(x.DatabaseBytes)/(1<<20))
		dead := map[string]int64{}
		for _, t := range x.Tables {
			dead[t.Table] = t.Dead
		}
		for _, t := range tables {
			fmt.Fprintf(tw, "%d\t", dead[t])
		}
		fmt.Fprintf(tw, "%d\t\n", x.Errors)
	}
	tw.Flush()
}

// msText is d in milliseconds with one decimal.
func msText(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }
