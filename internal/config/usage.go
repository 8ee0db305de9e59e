package config

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Usage returns the --help text: the flags, then every environment variable
// with its default, generated from the same table Load parses with.
func Usage() string {
	var b strings.Builder
	b.WriteString("Usage: queen [flags]\n" +
		"       queen import-queen --from SOURCE_URL [--schema queen] [--dry-run]   (copy a Queen database in; docs/deploy.md)\n\nFlags:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  --port N\tlisten port (overrides PORT)")
	fmt.Fprintln(tw, "  --host H\tlisten address (overrides HOST)")
	fmt.Fprintln(tw, "  --dev\tdebug logging (overrides LOG_LEVEL)")
	fmt.Fprintln(tw, "  --version\tprint the version and exit")
	fmt.Fprintln(tw, "  --help\tprint this help and exit")
	tw.Flush()

	b.WriteString("\nEnvironment variables (unset or empty means the default):\n")
	nameW, defW := 0, 0
	for _, v := range variables {
		nameW = max(nameW, len(v.name))
		defW = max(defW, len(shownDefault(v)))
	}
	group := ""
	for _, v := range variables {
		if v.group != group {
			group = v.group
			fmt.Fprintf(&b, "\n  %s\n", group)
		}
		fmt.Fprintf(&b, "    %-*s  %-*s  %s\n", nameW, v.name, defW, shownDefault(v), v.help)
	}

	b.WriteString("\nVariables of the original Queen server that have no meaning here\n" +
		"(NUM_WORKERS, SIDECAR_*, QUEEN_UDP_*, QUEEN_SYNC_*, QUEEN_CACHE_*, ...) are ignored.\n")
	return b.String()
}

// shownDefault is the default as a reader should see it; "-" marks a variable
// whose absence means the feature is off.
func shownDefault(v variable) string {
	switch {
	case v.shown != "":
		return v.shown
	case v.def != "":
		return v.def
	}
	return "-"
}
