// Command queenctl operates a Queen MQ broker from the shell: push, pop, ack, consume and tail
// messages, manage queues, run transactions, browse the DLQ and check health. It is built on
// the Go client (github.com/queen-go/queen/client).
//
// Exit codes, for scripts:
//
//	0  success
//	1  the broker refused or failed the operation, or could not be reached (4xx/5xx, network,
//	   rolled-back transaction, failed push items, rejected acks, unhealthy broker)
//	2  usage error: unknown command or flag, bad flag value, missing argument, invalid input
//	3  empty or not found: pop/consume/tail got no message, an ack or lease named nothing,
//	   the queue, group or partition does not exist
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes; documented in the package comment and in usage.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
)

func main() {
	// SIGINT/SIGTERM stop consume and tail gracefully: the message in hand is finished and
	// acked, the rest of its batch released.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runIO(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis of the positional arguments
	summary string
	run     func(a *app, args []string) int
}

// commands lists the subcommands in the order usage shows them.
var commands []command

func init() {
	commands = []command{
		{"push", "QUEUE [PAYLOAD...]", "push JSON payloads (arguments, or JSON lines from --file/stdin)", cmdPush},
		{"pop", "QUEUE", "pop messages and print them as JSON lines", cmdPop},
		{"ack", "[-]", "ack a message by ids, or the messages read as JSON lines from stdin", cmdAck},
		{"extend", "LEASE_ID", "extend a lease", cmdExtend},
		{"consume", "QUEUE", "consume messages: print each as a JSON line, then ack it", cmdConsume},
		{"tail", "QUEUE", "follow new messages in an observer group, without taking them from workers", cmdTail},
		{"queues", "list|create|configure|delete [NAME]", "list and manage queues", cmdQueues},
		{"txn", "FILE|-", "commit a transaction read from a JSON file", cmdTxn},
		{"dlq", "[QUEUE]", "list dead-lettered messages", cmdDLQ},
		{"seek", "QUEUE", "move a consumer group's cursor", cmdSeek},
		{"health", "", "check the broker", cmdHealth},
	}
}

// runIO parses the global flags and runs one command.
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, g: defaultGlobals()}
	fs := a.flagSet("queenctl")
	fs.Usage = func() { a.usage(stdout) }
	if code, ok := a.parse(fs, args, false); !ok {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		a.usage(stderr)
		return exitUsage
	}
	if rest[0] == "help" {
		a.usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == rest[0] {
			a.cmd = c
			return c.run(a, rest[1:])
		}
	}
	msg := fmt.Sprintf("unknown command %q", rest[0])
	if s := suggest(rest[0]); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return a.usageError("%s (run 'queenctl help' for the list)", msg)
}

// usage prints the command list, the global flags and the exit codes.
func (a *app) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: queenctl [global flags] COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %-36s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nGlobal flags (also accepted after the command):\n")
	fs := a.flagSet("queenctl")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Exit codes: 0 ok; 1 operation failed or broker unreachable; 2 usage error;
3 empty or not found (no message, unknown message/lease/queue).

Run 'queenctl COMMAND -h' for a command's flags.
`)
}

// suggest returns the command closest to a mistyped one, or "".
func suggest(s string) string {
	best, bestD := "", 3 // further than two edits is not a typo
	for _, c := range commands {
		if d := editDistance(s, c.name); d < bestD {
			best, bestD = c.name, d
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
