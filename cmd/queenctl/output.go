package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// jsonLine writes v as one line of JSON, zero times as null (nullTimes).
func (a *app) jsonLine(v any) error {
	b, err := json.Marshal(nullTimes(v))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// record writes one item of a stream (a message, a push result): a YAML document with
// --output yaml, else a JSON line, so that `queenctl pop | jq` and `queenctl pop | queenctl
// ack -` always work.
func (a *app) record(v any) error {
	if a.g.output == "yaml" {
		b, err := yaml.Marshal(nullTimes(v))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "---\n%s", b)
		return err
	}
	return a.jsonLine(v)
}

// show prints v as indented JSON with --output json, as YAML with --output yaml (the same
// field names: YAML is made from the JSON; zero times are null in both, see nullTimes), and as
// a table otherwise: header names the columns and rows returns the cells.
func (a *app) show(v any, header []string, rows [][]string) error {
	switch a.g.output {
	case "json":
		b, err := json.MarshalIndent(nullTimes(v), "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(nullTimes(v))
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// print is show for a command's last step: it returns the exit code.
func (a *app) print(v any, header []string, rows [][]string) int {
	if err := a.show(v, header, rows); err != nil {
		return a.fail(err)
	}
	return exitOK
}

// truncate shortens a cell for tables, where a long payload would wreck the layout.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// ts formats a time for tables; the zero time is empty.
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// progress is the live progress line of long operations, on stderr: a bar with a count,
// a percentage and an estimate when the total is known, a count and a rate otherwise.
type progress struct {
	w     io.Writer
	label string
	total int64
	start time.Time
	n     atomic.Int64
	stop  chan struct{}
	done  sync.WaitGroup
}

// startProgress starts the progress line when stderr is a terminal or --progress is given;
// otherwise it returns nil, on which add and finish do nothing, so scripts' stderr stays
// clean. total <= 0 means unknown.
func (a *app) startProgress(label string, total int64) *progress {
	if !a.g.progress && !stderrIsTerminal(a.stderr) {
		return nil
	}
	p := &progress{w: a.stderr, label: label, total: total, start: time.Now(), stop: make(chan struct{})}
	p.done.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.print("\n")
				return
			case <-t.C:
				p.print("")
			}
		}
	})
	return p
}

// add counts n more items.
func (p *progress) add(n int) {
	if p != nil {
		p.n.Add(int64(n))
	}
}

// finish prints the final figures and ends the line.
func (p *progress) finish() {
	if p != nil {
		close(p.stop)
		p.done.Wait()
	}
}

// barWidth is the number of cells of the bar.
const barWidth = 30

func (p *progress) print(end string) {
	n := p.n.Load()
	secs := time.Since(p.start).Seconds()
	rate := float64(n) / max(secs, 0.001)
	// \r rewrites the line in place; the trailing spaces erase a longer previous line.
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d %s  %.1f/s  %.0fs   %s", n, p.label, rate, secs, end)
		return
	}
	frac := min(float64(n)/float64(p.total), 1)
	filled := int(frac * barWidth)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled)
	if filled > 0 && filled < barWidth {
		bar = bar[:filled-1] + ">" + bar[filled:]
	}
	eta := ""
	if rate > 0 && n < p.total {
		eta = fmt.Sprintf("  eta %.0fs", float64(p.total-n)/rate)
	}
	fmt.Fprintf(p.w, "\r[%s] %3.0f%%  %d/%d %s  %.1f/s  %.0fs%s   %s", bar, frac*100, n, p.total, p.label, rate, secs, eta, end)
}

// stderrIsTerminal reports whether w is a terminal; a variable so tests can pretend.
var stderrIsTerminal = isTerminalWriter

// isTerminalWriter is isTerminal for any value.
func isTerminalWriter(w any) bool {
	iw, ok := w.(io.Writer)
	return ok && isTerminal(iw)
}

// isTerminal reports whether w is a character device, without a terminal library.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
