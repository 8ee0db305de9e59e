package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	queen "github.com/queen-go/queen/client"
)

// globals are the flags every command accepts.
type globals struct {
	server   string
	token    string
	output   string
	progress bool
	timeout  duration
}

// defaultGlobals reads the environment, so a shell can point every command at a broker once.
func defaultGlobals() globals {
	g := globals{server: os.Getenv("QUEEN_SERVER"), token: os.Getenv("QUEEN_TOKEN")}
	if g.server == "" {
		g.server = "http://localhost:6632"
	}
	g.timeout = duration(queen.DefaultTimeout)
	return g
}

// app is one queenctl invocation.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	g              globals
	cmd            command
	c              *queen.Client // built from the global flags by parse
}

// flagSet returns a flag set with the global flags. The current values are the defaults, so
// global flags given before the command survive the command's own parse.
func (a *app) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by parse, with a hint
	fs.StringVar(&a.g.server, "server", a.g.server, "broker URL; several, comma-separated, fail over (env QUEEN_SERVER)")
	// A Func flag shows no default, so a token from the environment never appears in -h.
	fs.Func("token", "bearer token when the broker has authentication on (env QUEEN_TOKEN)", func(s string) error {
		a.g.token = s
		return nil
	})
	fs.StringVar(&a.g.output, "output", a.g.output, "output format: table or json (default: JSON lines for messages, tables otherwise)")
	fs.BoolVar(&a.g.progress, "progress", a.g.progress, "show a live rate line on stderr even when it is not a terminal")
	fs.Var(&a.g.timeout, "timeout", "timeout of one request attempt (e.g. 10s)")
	return fs
}

// commandFlags returns the flag set of the running command, with its usage.
func (a *app) commandFlags() *flag.FlagSet {
	fs := a.flagSet("queenctl " + a.cmd.name)
	fs.Usage = func() {
		fmt.Fprintf(a.stdout, "Usage: queenctl %s [flags] %s\n\n%s.\n\nFlags:\n", a.cmd.name, a.cmd.args, a.cmd.summary)
		fs.SetOutput(a.stdout)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, letting flags follow positional arguments when interspersed is set
// (queenctl push orders '{"a":1}' --partition p); "--" ends the flags. Afterwards fs.Args()
// holds the positional arguments. It returns ok=false with the exit code when the command
// must not go on (-h, or a usage error).
func (a *app) parse(fs *flag.FlagSet, args []string, interspersed bool) (int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return exitOK, false
			}
			return a.usageError("%v", err), false
		}
		rest := fs.Args()
		// The flag package drops the "--" it stops at; what it consumed tells.
		consumed := len(args) - len(rest)
		if !interspersed || len(rest) == 0 || (consumed > 0 && args[consumed-1] == "--") {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	_ = fs.Parse(append([]string{"--"}, pos...))
	if err := a.checkGlobals(); err != nil {
		return a.usageError("%v", err), false
	}
	return 0, true
}

// checkGlobals validates the global flags that the flag package cannot, and builds the
// client from them (no request is sent yet).
func (a *app) checkGlobals() error {
	if a.g.output != "" && a.g.output != "table" && a.g.output != "json" {
		return fmt.Errorf("invalid --output %q: want table or json", a.g.output)
	}
	c, err := queen.New(a.g.server, queen.WithBearerToken(a.g.token), queen.WithTimeout(time.Duration(a.g.timeout)))
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	a.c = c
	return nil
}

// parseCmd parses a command's flags (flags and arguments may be mixed) and checks that it got
// between min and max positional arguments (max < 0: any number).
func (a *app) parseCmd(fs *flag.FlagSet, args []string, min, max int) (int, bool) {
	if code, ok := a.parse(fs, args, true); !ok {
		return code, false
	}
	if n := fs.NArg(); n < min || (max >= 0 && n > max) {
		synopsis := strings.TrimSpace("queenctl " + a.cmd.name + " [flags] " + a.cmd.args)
		return a.usageError("usage: %s (got %d argument(s))", synopsis, n), false
	}
	return 0, true
}

// usageError reports a usage mistake and returns exit code 2.
func (a *app) usageError(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "queenctl: "+format+"\n", args...)
	if a.cmd.name != "" {
		fmt.Fprintf(a.stderr, "Run 'queenctl %s -h' for usage.\n", a.cmd.name)
	}
	return exitUsage
}

// fail reports an operation error and maps it to an exit code.
func (a *app) fail(err error) int {
	code, msg := exitFailure, err.Error()
	if he, ok := errors.AsType[*queen.HTTPError](err); ok {
		switch {
		case errors.Is(he, queen.ErrUnsupported):
			msg = fmt.Sprintf("the broker does not support this command yet (%s %s answered 404 Not found)", he.Method, he.URL)
		case he.StatusCode == 404:
			code, msg = exitNotFound, he.Message
		case he.StatusCode == 401 || he.StatusCode == 403:
			msg = fmt.Sprintf("%s (%d): check --token or QUEEN_TOKEN", he.Message, he.StatusCode)
		default:
			msg = fmt.Sprintf("broker answered %d: %s", he.StatusCode, he.Message)
		}
	}
	fmt.Fprintf(a.stderr, "queenctl %s: %s\n", a.cmd.name, msg)
	return code
}

// duration is a flag.Value for durations that also accepts a bare number of seconds.
type duration time.Duration

// String prints the duration for -h.
func (d *duration) String() string { return time.Duration(*d).String() }

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
