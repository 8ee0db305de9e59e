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
)

// jsonLine writes v as one line of JSON. Message streams use it whatever --output says, so
// that `queenctl pop | jq` and `queenctl pop | queenctl ack -` always work.
func (a *app) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

// show prints v as indented JSON with --output json, and as a table otherwise: header names
// the columns and rows returns the cells.
func (a *app) show(v any, header []string, rows [][]string) error {
	if a.g.output == "json" {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// truncate shortens a cell for tables, where a long payload would wreck the layout.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// rate is the live "N messages, R/s" line of long operations, on stderr.
type rate struct {
	w     io.Writer
	label string
	start time.Time
	n     atomic.Int64
	stop  chan struct{}
	done  sync.WaitGroup
}

// startRate starts the rate line when stderr is a terminal or --progress is given; otherwise
// it returns nil, on which add and finish do nothing, so scripts' stderr stays clean.
func (a *app) startRate(label string) *rate {
	if !a.g.progress && !isTerminal(a.stderr) {
		return nil
	}
	r := &rate{w: a.stderr, label: label, start: time.Now(), stop: make(chan struct{})}
	r.done.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				r.print("\n")
				return
			case <-t.C:
				r.print("")
			}
		}
	})
	return r
}

// add counts n more items.
func (r *rate) add(n int) {
	if r != nil {
		r.n.Add(int64(n))
	}
}

// finish prints the final figures and ends the line.
func (r *rate) finish() {
	if r != nil {
		close(r.stop)
		r.done.Wait()
	}
}

func (r *rate) print(end string) {
	n := r.n.Load()
	secs := time.Since(r.start).Seconds()
	// \r rewrites the line in place; the trailing spaces erase a longer previous line.
	fmt.Fprintf(r.w, "\r%d %s  %.1f/s  %.0fs   %s", n, r.label, float64(n)/max(secs, 0.001), secs, end)
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
