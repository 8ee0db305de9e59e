package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// pushCmd pushes payloads given as arguments, or read as JSON lines from a file or stdin.
func (a *app) pushCmd() *cobra.Command {
	var partition, txid, file string
	var raw bool
	var batch int
	cmd := &cobra.Command{
		Use:   "push QUEUE [PAYLOAD...]",
		Short: "Push JSON payloads (arguments, or JSON lines from --file/stdin)",
		Example: `  queenctl push orders '{"orderId":1}' '{"orderId":2}' --partition customer-42
  queenctl push orders '{"orderId":3}' --txid order-3
  seq 1 1000 | sed 's/.*/{"n":&}/' | queenctl push orders --file -`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: a.completeQueues,
	}
	f := cmd.Flags()
	f.StringVar(&partition, "partition", "", `partition (default "Default")`)
	f.StringVar(&txid, "txid", "", "transactionId (idempotency key) of the message; one payload only")
	f.StringVarP(&file, "file", "f", "", "read payloads from this file, one JSON value per line ('-' is stdin); a progress bar on a terminal")
	f.BoolVar(&raw, "raw", false, "send each payload as a JSON string instead of parsing it as JSON")
	f.IntVar(&batch, "batch", 100, "items per request when reading --file")
	cmd.RunE = a.run(func(pos []string) int {
		switch {
		case len(pos) == 0:
			return a.usageError("push needs a QUEUE")
		case file != "" && len(pos) > 1:
			return a.usageError("give payloads as arguments or with --file, not both")
		case file == "" && len(pos) == 1:
			return a.usageError("nothing to push: give PAYLOAD arguments, or --file FILE ('-' for stdin)")
		case txid != "" && len(pos) != 2:
			return a.usageError("--txid names one message: give exactly one PAYLOAD")
		case batch < 1:
			return a.usageError("--batch must be at least 1, got %d", batch)
		}
		q := a.c.Queue(pos[0]).Partition(partition)
		if file != "" {
			return a.pushLines(q, file, raw, batch)
		}
		payloads := make([]any, len(pos)-1)
		for i, s := range pos[1:] {
			p, err := payload(s, raw)
			if err != nil {
				return a.usageError("payload %d: %v", i+1, err)
			}
			payloads[i] = queen.Item{Payload: p, TransactionID: txid}
		}
		res, err := q.Push(a.ctx, payloads...)
		if err != nil {
			return a.fail(err)
		}
		if err := a.showPush(res); err != nil {
			return a.fail(err)
		}
		if res.Err() != nil {
			return exitFailure
		}
		return exitOK
	})
	return cmd
}

// payload turns one argument or line into a payload.
func payload(s string, raw bool) (any, error) {
	if raw {
		return s, nil
	}
	p, err := queen.JSON(s)
	if err != nil {
		return nil, fmt.Errorf("%.40q is not JSON; quote a string as '\"text\"' or use --raw", s)
	}
	return p, nil
}

// showPush prints push results.
func (a *app) showPush(res queen.PushResults) error {
	rows := make([][]string, len(res))
	for i, r := range res {
		rows[i] = []string{strconv.Itoa(r.Index), string(r.Status), r.TransactionID, r.MessageID, r.Error}
	}
	return a.show(res, []string{"INDEX", "STATUS", "TRANSACTION_ID", "MESSAGE_ID", "ERROR"}, rows)
}

// countLines counts the non-empty lines of a regular file, for the progress bar's total; 0
// when it cannot tell (stdin, a pipe).
func countLines(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var n int64
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			n++
		}
	}
	return n
}

// pushLines streams JSON lines into the queue, batch by batch, with a progress line. With
// --output json (or yaml) every result is printed; a table run prints the failures and a
// summary, since a result per line of a large file helps nobody.
func (a *app) pushLines(q queen.Queue, file string, raw bool, batch int) int {
	var in io.Reader = a.stdin
	var total int64
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return a.usageError("--file: %v", err)
		}
		defer f.Close()
		in = f
		if a.g.progress || stderrIsTerminal(a.stderr) {
			total = countLines(file)
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64<<20) // a line may hold a payload up to the broker's limit
	r := a.startProgress("pushed", total)
	counts := map[queen.PushStatus]int{}
	pending := make([]any, 0, batch)
	send := func() error {
		res, err := q.Push(a.ctx, pending...)
		if err != nil {
			return err
		}
		pending = pending[:0]
		r.add(len(res))
		for _, x := range res {
			counts[x.Status]++
			if a.g.output == "json" || a.g.output == "yaml" {
				if err := a.record(x); err != nil {
					return err
				}
			} else if x.Status == queen.PushFailed {
				fmt.Fprintf(a.stderr, "failed: %s: %s\n", x.TransactionID, x.Error)
			}
		}
		return nil
	}
	code := exitOK
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		p, err := payload(sc.Text(), raw)
		if err != nil {
			r.finish()
			r = nil
			code = a.usageError("line %d: %v", line, err)
			break
		}
		if pending = append(pending, p); len(pending) == batch {
			if err := send(); err != nil {
				r.finish()
				return a.fail(err)
			}
		}
	}
	if err := sc.Err(); err != nil && code == exitOK {
		code = a.usageError("reading %s: %v", file, err)
	}
	var err error
	if len(pending) > 0 {
		err = send() // what was read before a bad line is still pushed
	}
	r.finish()
	if err != nil {
		return a.fail(err)
	}
	if a.g.output != "json" && a.g.output != "yaml" {
		fmt.Fprintf(a.stdout, "queued %d, duplicate %d, failed %d, buffered %d\n", counts[queen.PushQueued],
			counts[queen.PushDuplicate], counts[queen.PushFailed], counts[queen.PushBuffered])
	}
	if code == exitOK && counts[queen.PushFailed] > 0 {
		code = exitFailure
	}
	return code
}
