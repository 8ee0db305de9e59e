package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// manifest is the declarative queue configuration `queenctl apply -f` reads (YAML or JSON,
// the same fields): each queue's whole configuration, as POST /api/v1/configure takes it
// (docs/api/data-api.md §1), under the option names and units of the wire.
type manifest struct {
	Queues []manifestQueue `json:"queues"`
}

type manifestQueue struct {
	Name      string                     `json:"name"`
	Namespace *string                    `json:"namespace,omitempty"`
	Task      *string                    `json:"task,omitempty"`
	Options   map[string]json.RawMessage `json:"options,omitempty"`
}

// applyOption is one queue option as apply knows it: its wire name, its default (what
// configure sets when a manifest leaves it out, docs/api/concepts.md §2.2) and its client
// option. TestApplyOptionsMatchTheOptionTable checks the list against the broker's table.
type applyOption struct {
	key   string
	def   int64 // 0 or 1 for booleans
	isBol bool
	set   func(int64) queen.QueueOption
}

var applyOptions = []applyOption{
	{key: "leaseTime", def: 300, set: func(n int64) queen.QueueOption { return queen.LeaseTime(secs(n)) }},
	{key: "retryLimit", def: 3, set: func(n int64) queen.QueueOption { return queen.RetryLimit(int(n)) }},
	{key: "retryDelay", def: 1000, set: func(n int64) queen.QueueOption { return queen.RetryDelay(time.Duration(n) * time.Millisecond) }},
	{key: "priority", set: func(n int64) queen.QueueOption { return queen.Priority(int(n)) }},
	{key: "maxSize", set: func(n int64) queen.QueueOption { return queen.MaxSize(int(n)) }},
	{key: "ttl", def: 3600, set: func(n int64) queen.QueueOption { return queen.TTL(secs(n)) }},
	{key: "deadLetterQueue", isBol: true, set: func(n int64) queen.QueueOption { return queen.DeadLetterQueue(n != 0) }},
	{key: "dlqAfterMaxRetries", isBol: true, set: func(n int64) queen.QueueOption { return queen.DLQAfterMaxRetries(n != 0) }},
	{key: "delayedProcessing", set: func(n int64) queen.QueueOption { return queen.DelayedProcessing(secs(n)) }},
	{key: "windowBuffer", set: func(n int64) queen.QueueOption { return queen.WindowBuffer(secs(n)) }},
	{key: "retentionSeconds", set: func(n int64) queen.QueueOption { return queen.Retention(secs(n)) }},
	{key: "completedRetentionSeconds", set: func(n int64) queen.QueueOption { return queen.CompletedRetention(secs(n)) }},
	{key: "retentionEnabled", isBol: true, set: func(n int64) queen.QueueOption { return queen.RetentionEnabled(n != 0) }},
	{key: "encryptionEnabled", isBol: true, set: func(n int64) queen.QueueOption { return queen.EncryptionEnabled(n != 0) }},
	{key: "maxWaitTimeSeconds", set: func(n int64) queen.QueueOption { return queen.MaxWaitTime(secs(n)) }},
	{key: "dedupWindowSeconds", def: 900, set: func(n int64) queen.QueueOption { return queen.DedupWindow(secs(n)) }},
}

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }

// desiredQueue is one manifest entry resolved to its whole configuration.
type desiredQueue struct {
	name, namespace, task string
	options               []int64 // in applyOptions order
}

// applyChange is one difference between a queue's configuration and the manifest.
type applyChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// applyResult is what apply did (or, with --dry-run, would do) to one queue.
type applyResult struct {
	Queue string `json:"queue"`
	// Action is created, configured or unchanged (with --dry-run: create, configure,
	// unchanged); "configured" without changes when the broker does not report a queue's
	// options, so apply could not tell and configured it anyway.
	Action string `json:"action"`
	// Changes lists what differs (for a new queue: its labels and the options not at their
	// defaults, From null).
	Changes []applyChange `json:"changes"`
	Applied bool          `json:"applied"`
}

// applyCmd is `queenctl apply -f FILE|-`.
func (a *app) applyCmd() *cobra.Command {
	var file string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE|-",
		Short: "Create or configure queues from a YAML or JSON manifest",
		Long: `Create or configure the queues a manifest lists, so that each ends up with exactly the
configuration written there: an option left out goes back to its default, and namespace/task
left out go back to the values derived from the name (POST /api/v1/configure replaces a
queue's whole configuration). Queues whose configuration already matches are left alone, so
applying the same manifest again changes nothing. Queues the manifest does not list are not
touched. --dry-run prints what would change without changing it.

The manifest (YAML or JSON; '-f -' reads stdin) uses the option names and units of the wire
(docs/api/concepts.md §2.2: seconds, retryDelay in milliseconds):

  queues:
    - name: orders
      namespace: billing        # optional
      task: invoices            # optional
      options:
        leaseTime: 120          # seconds
        retryLimit: 5
        retryDelay: 2000        # milliseconds
        maxSize: 10000
        dedupWindowSeconds: 3600`,
		Example: `  queenctl apply -f queues.yaml
  queenctl apply -f queues.yaml --dry-run
  cat queues.json | queenctl apply -f - -o json`,
		Args: nargs(0, 0),
		RunE: a.run(func([]string) int {
			if file == "" {
				return a.usageError("apply needs -f FILE (or -f - for stdin)")
			}
			want, err := a.readManifest(file)
			if err != nil {
				return a.usageError("%s: %v", file, err)
			}
			return a.apply(want, dryRun)
		}),
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "manifest file (YAML or JSON); - reads stdin")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change and change nothing")
	return cmd
}

// readManifest reads and checks a manifest: every queue named once, only known options, each
// of its type (an integer from 0 to 2,147,483,647, or a boolean). A typo in an option name is
// refused here rather than ignored by the broker.
func (a *app) readManifest(file string) ([]desiredQueue, error) {
	var in io.Reader = a.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	raw, err := io.ReadAll(in)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw) // JSON is YAML too
	if err != nil {
		return nil, err
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a manifest: %v", err)
	}
	if len(m.Queues) == 0 {
		return nil, errors.New(`no queues: want {"queues":[{"name":...,"options":{...}}]}`)
	}
	seen := map[string]bool{}
	out := make([]desiredQueue, len(m.Queues))
	for i, q := range m.Queues {
		if q.Name == "" {
			return nil, fmt.Errorf("queue %d has no name", i+1)
		}
		if seen[q.Name] {
			return nil, fmt.Errorf("queue %q is listed twice", q.Name)
		}
		seen[q.Name] = true
		d := desiredQueue{name: q.Name, options: make([]int64, len(applyOptions))}
		d.namespace, d.task = derivedLabels(q.Name)
		if q.Namespace != nil {
			d.namespace = *q.Namespace
		}
		if q.Task != nil {
			d.task = *q.Task
		}
		for key := range q.Options {
			if !slices.ContainsFunc(applyOptions, func(o applyOption) bool { return o.key == key }) {
				return nil, fmt.Errorf("queue %q: unknown option %q", q.Name, key)
			}
		}
		for j, o := range applyOptions {
			d.options[j] = o.def
			v, ok := q.Options[o.key]
			if !ok {
				continue
			}
			if d.options[j], err = optionValue(o, v); err != nil {
				return nil, fmt.Errorf("queue %q: option %s: %v", q.Name, o.key, err)
			}
		}
		out[i] = d
	}
	return out, nil
}

// optionValue reads one option's manifest value.
func optionValue(o applyOption, v json.RawMessage) (int64, error) {
	if o.isBol {
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return 0, errors.New("want true or false")
		}
		if b {
			return 1, nil
		}
		return 0, nil
	}
	var n int64
	if json.Unmarshal(v, &n) != nil || n < 0 || n > math.MaxInt32 {
		return 0, errors.New("want an integer from 0 to 2147483647")
	}
	return n, nil
}

// derivedLabels are the namespace and task configure gives a queue that names neither
// (docs/api/concepts.md §2.1): the text before the first dot, and the text between the first
// and the second.
func derivedLabels(name string) (namespace, task string) {
	ns, rest, found := strings.Cut(name, ".")
	if !found {
		return name, ""
	}
	task, _, _ = strings.Cut(rest, ".")
	return ns, task
}

// apply brings each queue to its manifest configuration, in manifest order, and prints what
// happened. A failure stops at that queue (the ones before it are applied).
func (a *app) apply(want []desiredQueue, dryRun bool) int {
	results := make([]applyResult, 0, len(want))
	code := exitOK
	for _, d := range want {
		r, err := a.applyQueue(d, dryRun)
		if err != nil {
			code = a.fail(fmt.Errorf("queue %s: %w", d.name, err))
			break
		}
		results = append(results, r)
	}
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		var ch []string
		for _, c := range r.Changes {
			if c.From == nil {
				ch = append(ch, fmt.Sprintf("%s=%s", c.Field, cell(c.To)))
			} else {
				ch = append(ch, fmt.Sprintf("%s: %s -> %s", c.Field, cell(c.From), cell(c.To)))
			}
		}
		if len(ch) == 0 {
			ch = []string{"-"}
		}
		rows = append(rows, []string{r.Queue, r.Action, strings.Join(ch, ", ")})
	}
	if err := a.show(results, []string{"QUEUE", "ACTION", "CHANGES"}, rows); err != nil && code == exitOK {
		return a.fail(err)
	}
	return code
}

// applyQueue compares one queue with its manifest entry and configures it when they differ.
func (a *app) applyQueue(d desiredQueue, dryRun bool) (applyResult, error) {
	r := applyResult{Queue: d.name, Changes: []applyChange{}}
	detail, err := a.c.Queue(d.name).Detail(a.ctx)
	switch {
	case errors.Is(err, queen.ErrNotFound):
		r.Action = "created"
		r.Changes = append(r.Changes, applyChange{"namespace", nil, d.namespace}, applyChange{"task", nil, d.task})
		// Options at their defaults are no change worth listing for a new queue.
		for j, o := range applyOptions {
			if d.options[j] != o.def {
				r.Changes = append(r.Changes, applyChange{o.key, nil, display(o, d.options[j])})
			}
		}
	case err != nil:
		return r, err
	default:
		r.Action = "configured"
		if detail.Namespace != d.namespace {
			r.Changes = append(r.Changes, applyChange{"namespace", detail.Namespace, d.namespace})
		}
		if detail.Task != d.task {
			r.Changes = append(r.Changes, applyChange{"task", detail.Task, d.task})
		}
		if detail.Options != nil {
			for j, o := range applyOptions {
				have, ok := currentValue(o, detail.Options[o.key])
				if !ok || have != d.options[j] {
					r.Changes = append(r.Changes, applyChange{o.key, detail.Options[o.key], display(o, d.options[j])})
				}
			}
			if len(r.Changes) == 0 {
				r.Action = "unchanged"
			}
		}
		// Without options in the answer (a broker older than admin-api.md §1's "options") the
		// differences are unknown: configure anyway, which is harmless when nothing differs.
	}
	if dryRun {
		r.Action = map[string]string{"created": "create", "configured": "configure", "unchanged": "unchanged"}[r.Action]
		return r, nil
	}
	if r.Action == "unchanged" {
		return r, nil
	}
	opts := []queen.QueueOption{queen.Namespace(d.namespace), queen.Task(d.task)}
	for j, o := range applyOptions {
		opts = append(opts, o.set(d.options[j]))
	}
	if _, err := a.c.Queue(d.name).Configure(a.ctx, opts...); err != nil {
		return r, err
	}
	r.Applied = true
	return r, nil
}

// currentValue reads an option of the broker's answer (a JSON number or boolean).
func currentValue(o applyOption, v any) (int64, bool) {
	switch x := v.(type) {
	case bool:
		if !o.isBol {
			return 0, false
		}
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		return int64(x), !o.isBol
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil && !o.isBol
	}
	return 0, false
}

// display is an option value as the manifest writes it.
func display(o applyOption, n int64) any {
	if o.isBol {
		return n != 0
	}
	return n
}

// cell prints a value of a change for the table: strings quoted, so that an empty task shows.
func cell(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
