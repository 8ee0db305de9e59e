// Command queen-bench drives a running queen-go broker over HTTP and reports each scenario
// against PostgreSQL's own limit measured in the same run on the same database.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/queen-go/queen/internal/bench"
	buildversion "github.com/queen-go/queen/internal/version"
)

// version is set at build time with -ldflags "-X main.version=…" (make build, make release).
// Left empty, the version comes from the Go build information (internal/version).
var version string

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queen-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.Config
	scenario := fs.String("scenario", "push", fmt.Sprintf("one of %v", bench.Scenarios))
	fs.StringVar(&cfg.Server, "server", "http://127.0.0.1:6632", "broker base URL (loopback only)")
	fs.StringVar(&cfg.DSN, "db", os.Getenv("DATABASE_URL"), "the broker's database, for the same-run baseline ('' = no baseline)")
	fs.IntVar(&cfg.PID, "pid", 0, "broker process id, to report its CPU and peak RSS")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each measured phase")
	fs.IntVar(&cfg.Conns, "conns", 50, "concurrent connections (producers or consumers per group)")
	fs.IntVar(&cfg.Batch, "batch", 100, "items per push / messages per pop")
	fs.IntVar(&cfg.Partitions, "partitions", 10, "partitions")
	fs.IntVar(&cfg.Spread, "spread", 0, "push: spread each request's items over this many of the partitions (0 or 1: one partition per request)")
	fs.IntVar(&cfg.BaselineConns, "baseline-conns", 0, "connections of the same-run baseline (0: 32 for single-row commits, 8 for the batch baselines)")
	fs.IntVar(&cfg.PayloadBytes, "payload", 100, "payload filler size in bytes")
	fs.IntVar(&cfg.Messages, "messages", 0, "messages to prefill for consume scenarios (0 = derived)")
	fs.IntVar(&cfg.Groups, "groups", 3, "consumer groups (fanout; steady: default 1)")
	fs.StringVar(&cfg.AckMode, "ack", "batch", "ack | batch | auto")
	fs.IntVar(&cfg.Rate, "rate", 1000, "e2e, streams-window: messages per second offered (steady: default 2000)")
	fs.IntVar(&cfg.StateOps, "stateops", 1, "streams-cycle: state upserts per cycle")
	fs.IntVar(&cfg.Windows, "windows", 10, "heldxmin: measured windows")
	fs.DurationVar(&cfg.Window, "window", 15*time.Second, "heldxmin, steady: length of each window (steady: default 60s)")
	fs.IntVar(&cfg.Producers, "producers", 20, "heldxmin: single-message producers (push batch 1); steady: producers of -batch (default 10)")
	fs.IntVar(&cfg.Consumers, "consumers", 50, "heldxmin: single-message pop + ack consumers; sweep: pop + ack consumers (default 20); steady: consumers per group (default 20)")
	fs.IntVar(&cfg.HoldFrom, "hold-from", 2, "heldxmin: first window (1-based) during which another session of -db holds a REPEATABLE READ snapshot open (0 = never: a control run)")
	fs.StringVar(&cfg.Schema, "schema", envOr("DB_SCHEMA", "queen_go"), "heldxmin, steady: the broker's schema in -db (its DB_SCHEMA)")
	fs.StringVar(&cfg.Sweep, "sweep", bench.SweepDefaultSteps, "sweep: partition counts of the steps, separated by commas")
	fs.IntVar(&cfg.RetentionSeconds, "retention", 120, "steady: the queue's retentionSeconds and completedRetentionSeconds")
	fs.IntVar(&cfg.DedupWindowSeconds, "dedup-window", 0, "steady: the queue's dedupWindowSeconds (0 = the queue's default, 900)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("quiet", false, "no live progress line")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Flags the command line left unset take the scenario's own defaults where it has them.
	for name, value := range scenarioDefaults[*scenario] {
		if !flagSet(fs, name) {
			if err := fs.Set(name, value); err != nil {
				fmt.Fprintln(stderr, "queen-bench:", err)
				return 2
			}
		}
	}
	if *showVersion {
		fmt.Fprintln(stdout, "queen-bench", buildversion.Describe(version))
		return 0
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "queen-bench:", err)
			return 1
		}
		defer stopProfile()
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := bench.Run(ctx, *scenario, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "queen-bench:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return 0
	}
	printTable(stdout, res)
	return 0
}

// scenarioDefaults are the flag values a scenario takes when the command line leaves them
// unset, where they differ from the flags' own defaults.
var scenarioDefaults = map[string]map[string]string{
	"heldxmin": {"partitions": "200"},
	// push b10 × 50 and pop + ack b10 × 20 per step
	"sweep": {"batch": "10", "conns": "50", "consumers": "20"},
	// one queue of 5,000 partitions, 10 producers of batches of 10 at 2,000 msgs/s in all,
	// one group of 20 consumers popping up to 10, for 20 minutes in windows of a minute
	"steady": {"duration": "20m", "window": "60s", "rate": "2000", "partitions": "5000", "producers": "10",
		"consumers": "20", "groups": "1", "batch": "10"},
}

func printTable(w io.Writer, r bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s\t%s\n", r.Scenario, r.Params)
	fmt.Fprintf(tw, "messages\t%d in %s (%d requests, %d errors)\n", r.Messages, r.Elapsed.Round(time.Millisecond), r.Requests, r.Errors)
	if r.Buffered > 0 {
		fmt.Fprintf(tw, "buffered\t%d items spooled by the broker, not written (left out of the throughput)\n", r.Buffered)
	}
	fmt.Fprintf(tw, "throughput\t%.0f msgs/s\n", r.MsgsPerSec)
	fmt.Fprintf(tw, "latency\tp50 %s  p99 %s  p99.9 %s\n", r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.P999.Round(10*time.Microsecond))
	if r.PeakRSSBytes > 0 {
		fmt.Fprintf(tw, "broker\tcpu %.1f s  peak RSS %.1f MB\n", r.CPUSeconds, float64(r.PeakRSSBytes)/(1<<20))
	}
	printCPU(tw, "cpu per msg", r.CPU)
	if len(r.RequestsPerCall) > 0 {
		fmt.Fprintf(tw, "requests per database call\t%s\n", bench.FormatPerCall(r.RequestsPerCall))
	}
	if r.Baseline != nil {
		fmt.Fprintf(tw, "baseline\t%.0f rows/s (%s)\n", r.Baseline.RowsPerSec, r.Baseline.Name)
		printCPU(tw, "baseline cpu per row", r.Baseline.CPU)
		fmt.Fprintf(tw, "ratio\t%.0f%%\n", r.Ratio*100)
	}
	tw.Flush()
	printWindows(w, r)
	printSweep(w, r)
	printSteady(w, r)
}

// printWindows prints the heldxmin scenario's windows and the row versions of its tables.
func printWindows(w io.Writer, r bench.Result) {
	if len(r.Windows) == 0 {
		return
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "window\theld\tpop+ack msgs/s\tp50 ms\tp99 ms\tpush msgs/s\tp50 ms\tp99 ms\tsnapshot age\txmin age\tdb µs/msg\terrors\t")
	for _, x := range r.Windows {
		held, age, xids := "no", "-", "-"
		if x.Held {
			held, age, xids = "yes", x.SnapshotAge.Round(100*time.Millisecond).String(), fmt.Sprint(x.XminAge)
		}
		db := "-"
		if x.CPU != nil {
			db = fmt.Sprintf("%.0f", x.CPU.Database)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t\n", x.Window, held, x.PopAckPerSec,
			ms(x.PopAckP50), ms(x.PopAckP99), x.PushPerSec, ms(x.PushP50), ms(x.PushP99), age, xids, db, x.Errors)
	}
	tw.Flush()
	if len(r.Tables) == 0 {
		return
	}
	fmt.Fprintf(w, "\nrow versions at the end (%s):\n", r.TablesSource)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	scanned := r.Tables[0].ScannedLive != nil
	if scanned {
		fmt.Fprintln(tw, "table\tlive\tdead\tscanned live\tscanned dead\t")
	} else {
		fmt.Fprintln(tw, "table\tlive\tdead\t")
	}
	for _, t := range r.Tables {
		if scanned && t.ScannedLive != nil && t.ScannedDead != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", t.Table, t.Live, t.Dead, *t.ScannedLive, *t.ScannedDead)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t\n", t.Table, t.Live, t.Dead)
		}
	}
	tw.Flush()
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func printCPU(w io.Writer, label string, c *bench.CPUCost) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "%s\tbroker %.1f µs  database %.1f µs  load generator %.1f µs  machine %.1f µs\n",
		label, c.Broker, c.Database, c.Generator, c.Machine)
}

// startCPUProfile profiles this process (the load generator) until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
