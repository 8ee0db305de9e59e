package importer

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// Report is what a run read and wrote, per kind of row.
type Report struct {
	// Read and Written count rows per kind (KindNames), over the items this run imported;
	// items an earlier run imported count in neither.
	Read, Written map[string]int64
	// Skipped names the queues an earlier run imported.
	Skipped []string
	Elapsed time.Duration
}

// KindNames are the kinds of Report.Read and Report.Written, in the order printed.
func KindNames() []string { return kindNames[:] }

func newReport(p *plan) *Report {
	r := &Report{Read: map[string]int64{}, Written: map[string]int64{}}
	for _, q := range p.queues {
		if q.done {
			r.Skipped = append(r.Skipped, q.name)
		}
	}
	return r
}

func (r *Report) add(read, wrote [nKinds]int64) {
	for k := range nKinds {
		r.Read[kindNames[k]] += read[k]
		r.Written[kindNames[k]] += wrote[k]
	}
}

// Print writes the final table.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tread\twritten\t")
	for _, k := range kindNames {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", k, r.Read[k], r.Written[k])
	}
	tw.Flush()
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "Imported by an earlier run, skipped: %s\n", strings.Join(r.Skipped, ", "))
	}
	fmt.Fprintln(w, "Group positions: one row per (partition, group); groups subscribed in mode new or timestamp also get one on partitions where Queen had none.")
	fmt.Fprintf(w, "Done in %s.\n", r.Elapsed.Round(time.Millisecond))
}

// startProgress draws the progress of done out of total until the returned stop is called:
// on a terminal a bar redrawn in place five times a second, otherwise a line every five
// seconds (a log file gets no carriage returns).
func startProgress(w io.Writer, terminal bool, done *atomic.Int64, total int64, start time.Time) (stop func()) {
	every := 5 * time.Second
	if terminal {
		every = 200 * time.Millisecond
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				if terminal {
					fmt.Fprintln(w, "\r"+progressLine(done.Load(), total, time.Since(start), true))
				}
				return
			case <-t.C:
				line := progressLine(done.Load(), total, time.Since(start), terminal)
				if terminal {
					fmt.Fprint(w, "\r"+line)
				} else {
					fmt.Fprintln(w, line)
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// progressLine is "rows done/total, rows/s, time left", with a bar in front on a terminal.
func progressLine(done, total int64, elapsed time.Duration, bar bool) string {
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(max(total-done, 0))/rate) * time.Second).Round(time.Second).String()
	}
	line := fmt.Sprintf("%3.0f%%  %d/%d rows  %.0f rows/s  %s left", frac*100, done, total, rate, eta)
	if !bar {
		return "progress: " + line
	}
	const width = 30
	n := int(frac * width)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "] " + line + "   "
}
