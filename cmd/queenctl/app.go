package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	queen "github.com/queen-go/queen/client"
	"github.com/spf13/cobra"
)

// defaultServer is the broker queenctl talks to when nothing names one.
const defaultServer = "http://localhost:6632"

// globals are the flags every command accepts.
type globals struct {
	server   string
	token    string
	context  string
	output   string
	progress bool
	timeout  duration
}

// register adds the global flags to the root command; every command inherits them.
func (g *globals) register(root *cobra.Command) {
	g.timeout = duration(queen.DefaultTimeout)
	f := root.PersistentFlags()
	f.StringVar(&g.server, "server", "", "broker URL; several, comma-separated, fail over (default $QUEEN_SERVER, the context's, or "+defaultServer+")")
	f.StringVar(&g.token, "token", "", "bearer token when the broker has authentication on (default $QUEEN_TOKEN or the context's)")
	f.StringVar(&g.context, "context", "", "use this context instead of the current one (see 'queenctl context')")
	f.StringVarP(&g.output, "output", "o", "", "output format: table, json or yaml (default: JSON lines for messages, tables otherwise)")
	f.BoolVar(&g.progress, "progress", false, "show progress on stderr even when it is not a terminal")
	f.Var(&g.timeout, "timeout", "timeout of one request attempt (e.g. 10s)")
}

// app is one queenctl invocation.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	g              globals
	name           string        // the running command's path without "queenctl ", for messages
	c              *queen.Client // built from the globals by prepare
}

// prepare checks the global flags, resolves the broker and token (flags, then environment,
// then context, then the default) and builds the client; no request is sent yet. Commands
// that need no broker (context, completion, help) skip the client.
func (a *app) prepare(cmd *cobra.Command) error {
	a.name = strings.TrimPrefix(cmd.CommandPath(), "queenctl ")
	switch a.g.output {
	case "", "table", "json", "yaml":
	default:
		return usageErr{fmt.Sprintf("invalid --output %q: want table, json or yaml", a.g.output)}
	}
	for p := cmd; p != nil; p = p.Parent() {
		if p.Annotations["noClient"] != "" || p.Name() == "completion" || p.Name() == "help" {
			return nil
		}
	}
	server, token, err := a.resolve(cmd)
	if err != nil {
		return err
	}
	c, err := queen.New(server, queen.WithBearerToken(token), queen.WithTimeout(time.Duration(a.g.timeout)))
	if err != nil {
		return usageErr{fmt.Sprintf("--server: %v", err)}
	}
	a.c = c
	return nil
}

// resolve picks the server and token: --server/--token, then $QUEEN_SERVER/$QUEEN_TOKEN,
// then the selected context (--context, else the current one), then the default server. A
// context's token is sent only to that context's server.
func (a *app) resolve(cmd *cobra.Command) (server, token string, err error) {
	flags := cmd.Flags()
	server, token = os.Getenv("QUEEN_SERVER"), os.Getenv("QUEEN_TOKEN")
	if flags.Changed("server") {
		server = a.g.server
	}
	if flags.Changed("token") {
		token = a.g.token
	}
	var ctxt *contextEntry
	if server == "" || token == "" || a.g.context != "" {
		cfg, path, err := loadConfig()
		if err != nil {
			return "", "", usageErr{fmt.Sprintf("%s: %v", path, err)}
		}
		name := cfg.CurrentContext
		if a.g.context != "" {
			name = a.g.context
		}
		if name != "" {
			if ctxt = cfg.find(name); ctxt == nil {
				return "", "", usageErr{fmt.Sprintf("context %q does not exist (see 'queenctl context list')", name)}
			}
		}
	}
	if server == "" {
		server = defaultServer
		if ctxt != nil {
			server = ctxt.Server
		}
	}
	if token == "" && ctxt != nil && server == ctxt.Server {
		token = ctxt.Token
	}
	return server, token, nil
}

// usageError reports an invalid input found by a command and returns exit code 2.
func (a *app) usageError(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "queenctl: "+format+"\n", args...)
	fmt.Fprintf(a.stderr, "Run 'queenctl %s --help' for usage.\n", a.name)
	return exitUsage
}

// fail reports an operation error and maps it to an exit code.
func (a *app) fail(err error) int {
	code, msg := exitFailure, err.Error()
	if he, ok := errors.AsType[*queen.HTTPError](err); ok {
		kind, emptyName := emptyPathName(he.URL)
		switch {
		case he.StatusCode == 404 && emptyName:
			// The route exists, but an empty segment fills no parameter, so the broker answered
			// as for an unknown path: the named thing does not exist, the command is supported.
			code, msg = exitNotFound, kind+" not found (the name is empty)"
		case errors.Is(he, queen.ErrUnsupported):
			msg = fmt.Sprintf("the broker does not support this command yet (%s %s answered 404 Not found)", he.Method, he.URL)
		case he.StatusCode == 404:
			code, msg = exitNotFound, he.Message
		case he.StatusCode == 401 || he.StatusCode == 403:
			msg = fmt.Sprintf("%s (%d): check --token, QUEEN_TOKEN or the context's token", he.Message, he.StatusCode)
		default:
			msg = fmt.Sprintf("broker answered %d: %s", he.StatusCode, he.Message)
		}
	}
	fmt.Fprintf(a.stderr, "queenctl %s: %s\n", a.name, msg)
	return code
}

// pathNameKinds names the thing a route's parameter addresses by the static segment before it
// (docs/api/README.md §3), in the broker's own "<Thing> not found" wording.
var pathNameKinds = map[string]string{
	"queue": "Queue", "queues": "Queue", "partition": "Partition", "partitions": "Partition",
	"consumer-groups": "Consumer group", "by-name": "Trace name", "messages": "Message",
	"traces": "Message", "dlq": "DLQ entry", "lease": "Lease", "queries": "Stream query",
}

// emptyPathName reports whether the API path of rawURL has an empty segment, and what that
// segment names. No route of the API has one (an empty segment never fills a parameter,
// docs/api/README.md §2.9), so a 404 for such a path comes from an empty name given to a route
// the broker has, not from a broker that lacks the route. Only the part from /api/ or
// /streams/ on is read: a base URL's own path is not the command's.
func emptyPathName(rawURL string) (kind string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	p := u.EscapedPath()
	i := strings.Index(p, "/api/")
	if j := strings.Index(p, "/streams/"); i < 0 || (j >= 0 && j < i) {
		i = j
	}
	if i < 0 {
		return "", false
	}
	segs := strings.Split(p[i+1:], "/")
	for n, seg := range segs {
		if seg != "" {
			continue
		}
		for k := n - 1; k >= 0; k-- {
			if kind, known := pathNameKinds[segs[k]]; known {
				return kind, true
			}
		}
		return "Resource", true
	}
	return "", false
}

// duration is a flag value for durations that also accepts a bare number of seconds.
type duration time.Duration

// String prints the duration for --help.
func (d *duration) String() string { return time.Duration(*d).String() }

// Type names the value in --help.
func (d *duration) Type() string { return "duration" }

// Set parses "30s", "1m30s", "250ms" or a bare number of seconds.
func (d *duration) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "eE") {
		*d = duration(n * float64(time.Second))
	} else if v, err := time.ParseDuration(s); err == nil {
		*d = duration(v)
	} else {
		return fmt.Errorf("want a duration such as 30s, 1m30s or 250ms (a bare number is seconds)")
	}
	if *d < 0 {
		return errors.New("must not be negative")
	}
	return nil
}
