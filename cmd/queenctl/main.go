// Command queenctl operates a Queen MQ broker from the shell: push, pop, ack, consume and tail
// messages, manage queues, partitions, consumer groups and messages, browse the DLQ and traces,
// read the broker's status, and keep named contexts (server and token). It is built on the Go
// client (github.com/queen-go/queen/client) and on cobra.
//
// Exit codes, for scripts:
//
//	0  success
//	1  the broker refused or failed the operation, or could not be reached (4xx/5xx, network,
//	   rolled-back transaction, failed push items, rejected acks, unhealthy broker)
//	2  usage error: unknown command or flag, bad flag value, missing argument, invalid input
//	3  empty or not found: pop/consume/tail got no message, an ack or lease named nothing,
//	   the queue, group, message, partition or context does not exist
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes; documented in the package comment, in --help and in docs/queenctl.md.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
)

// version is stamped at build time: go build -ldflags "-X main.version=1.2.3" ./cmd/queenctl
// (make build does). Left empty, --version reads the Go build information (internal/version),
// as queen's does.
var version string

func main() {
	// SIGINT/SIGTERM stop consume and tail gracefully: the message in hand is finished and
	// acked, the rest of its batch released.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runIO(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
