package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// exitCode is the error a command returns to end with a non-zero exit code after it has
// reported the problem itself.
type exitCode int

// Error makes exitCode an error; it is never printed.
func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// usageErr is a usage mistake found before a command ran (unknown command or flag, bad flag
// value, wrong number of arguments): the message is printed with the command's usage.
type usageErr struct{ msg string }

// Error is the message.
func (e usageErr) Error() string { return e.msg }

const exitCodesHelp = `Exit codes:
  0  success
  1  the operation failed or the broker was unreachable (4xx/5xx, network, rolled-back
     transaction, failed push items, rejected acks, unhealthy broker)
  2  usage error: unknown command or flag, bad value, missing argument, invalid input
  3  empty or not found: no message, unknown message/lease/queue/group/context`

// runIO runs one queenctl invocation and returns its exit code.
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if code, ok := errors.AsType[exitCode](err); ok {
		return int(code)
	}
	// Anything else comes from cobra or an argument check: a usage error. The message, then
	// the usage of the command concerned, once, on stderr.
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "queenctl: %v\n\n%s", err, cmd.UsageString())
	return exitUsage
}

// newRoot builds the command tree of one invocation.
func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "queenctl",
		Short: "Operate a Queen MQ broker from the shell",
		Long: `queenctl operates a Queen MQ broker: push, pop, ack, consume and tail messages, manage
queues, partitions, consumer groups and messages, browse the DLQ and traces, read the broker's
status, and keep named contexts (server and token).

The broker is --server, else $QUEEN_SERVER, else the current context's server, else
http://localhost:6632; the token is --token, else $QUEEN_TOKEN, else the context's token (sent
only to the context's own server).

` + exitCodesHelp,
		Version:       versionDescribe(version),
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a command queenctl says so and shows its usage, on stderr, exit 2.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr{"no command given"}
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := suggest(cmd, args[0]); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return usageErr{msg + " (run 'queenctl help' for the list)"}
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.prepare(cmd) },
	}
	// Before the completion command is made: it keeps the writer it finds then.
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("queenctl {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr{err.Error()} })
	// Help goes to stdout, once; the default template adds the exit codes through Long.
	a.g.register(root)
	root.AddCommand(a.pushCmd(), a.popCmd(), a.ackCmd(), a.extendCmd(), a.consumeCmd(), a.tailCmd(),
		a.txnCmd(), a.queuesCmd(), a.partitionsCmd(), a.messagesCmd(), a.dlqCmd(), a.groupsCmd(), a.seekCmd(), a.replayCmd(),
		a.lagCmd(), a.tracesCmd(), a.statusCmd(), a.healthCmd(), a.contextCmd())
	root.AddCommand(a.applyCmd(), a.maintenanceCmd())
	// dlq delete lives in a file of its own (cmd_dlq_delete.go), attached here so that the dlq
	// group's definition stays as it is.
	for _, c := range root.Commands() {
		if c.Name() == "dlq" {
			c.AddCommand(a.dlqDeleteCmd())
		}
	}
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || (len(args) > 0 && cmd == root) || len(rest) > 0 {
				return usageErr{fmt.Sprintf("unknown help topic %q", strings.Join(args, " "))}
			}
			return cmd.Help()
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cmd, _, _ := root.Find(args)
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
	// cobra's completion command, made now so that it behaves like the other groups: a
	// missing or unknown shell is a usage error.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = "  source <(queenctl completion bash)\n  queenctl completion zsh > \"${fpath[1]}/_queenctl\""
			parent(c)
		}
	}
	return root
}

// run adapts a command body that returns an exit code to cobra.
func (a *app) run(f func(args []string) int) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		if code := f(args); code != exitOK {
			return exitCode(code)
		}
		return nil
	}
}

// nargs checks that a command got between min and max positional arguments (max < 0: any
// number), naming the synopsis when it did not.
func nargs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if n := len(args); n < min || (max >= 0 && n > max) {
			synopsis := strings.TrimSpace(strings.TrimPrefix(cmd.Use, cmd.Name()))
			line := strings.TrimSpace(cmd.CommandPath() + " [flags] " + synopsis)
			return usageErr{fmt.Sprintf("usage: %s (got %d argument(s))", line, n)}
		}
		return nil
	}
}

// parent makes cmd a group of subcommands: without one it is a usage error, "help" prints
// its help, and an unknown name says which ones exist.
func parent(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return usageErr{c.Name() + " needs a subcommand"}
		case args[0] == "help":
			return c.Help()
		}
		var names []string
		for _, s := range c.Commands() {
			names = append(names, s.Name())
		}
		return usageErr{fmt.Sprintf("unknown %s subcommand %q: want %s", c.Name(), args[0], strings.Join(names, ", "))}
	}
	return cmd
}

// suggest returns the command closest to a mistyped one, or "".
func suggest(root *cobra.Command, s string) string {
	best, bestD := "", 3 // further than two edits is not a typo
	for _, c := range root.Commands() {
		if d := editDistance(s, c.Name()); d < bestD && !c.Hidden {
			best, bestD = c.Name(), d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, enough for command-name typos.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
