// Package version tells which build of queen-go is running, for `queen --version`, the
// `version` field of /health and the other commands' version output.
//
// A release build stamps the version into each command's main package with
//
//	go build -ldflags "-X main.version=$(git describe --tags --always --dirty)"
//
// (the Makefile's build and release targets do). A binary built without that flag, by
// `go build` or `go install …@v1.2.3`, still tells what it was built from: the Go toolchain
// records the module version and the VCS revision in the binary, and String reads them with
// runtime/debug.ReadBuildInfo. A binary that holds neither (built with -buildvcs=false, from a
// tree without .git, or by go run) is Unknown, and Describe, which --version prints, says why.
package version

import (
	"runtime/debug"
	"strings"
)

// Unknown is the version of a binary that carries none: built without the -X flag, outside
// a module version and without VCS information (for example with -buildvcs=false).
const Unknown = "dev"

// unknownWhy is what Describe adds to Unknown. The build information cannot say which cause
// it was (-buildvcs=false is not recorded), so it names the usual ones and the way out: a
// user who sees a bare "dev" cannot tell a stale binary from a fresh one, nor report it.
const unknownWhy = "no version recorded: built by go run, outside a git checkout or with -buildvcs=false; " +
	"make build or go build -buildvcs=true names the commit"

// String returns the version of the running binary: stamped when it is not empty (the value
// of the main package's version variable, set with -ldflags "-X main.version=…"), otherwise
// what the build information holds, otherwise Unknown.
func String(stamped string) string {
	return resolve(stamped, debug.ReadBuildInfo)
}

// Describe is String for a person: the output of --version. When nothing names the build it
// says why, instead of a bare Unknown that looks like a real version. /health and metrics keep
// String's value, which a program may compare.
func Describe(stamped string) string {
	return describe(String(stamped))
}

func describe(v string) string {
	if v == Unknown {
		return Unknown + " (" + unknownWhy + ")"
	}
	return v
}

func resolve(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if v := strings.TrimSpace(stamped); v != "" {
		return v
	}
	if info, ok := read(); ok {
		return FromBuildInfo(info)
	}
	return Unknown
}

// FromBuildInfo returns the version recorded in a binary's build information: the main
// module's version when the toolchain knew one (a tag, or the pseudo-version Go 1.24 and later
// derive from the VCS, "+dirty" for modified trees), otherwise the first 12 digits of the VCS
// revision, with "-dirty" for a modified tree and the commit's time when recorded
// ("33dfbaf2f5a0-dirty (2026-12-01T18:08:49Z)": a revision alone does not say how old a build
// is), otherwise Unknown.
func FromBuildInfo(info *debug.BuildInfo) string {
	if info == nil {
		return Unknown
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, committed string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			committed = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return Unknown
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified {
		revision += "-dirty"
	}
	if committed != "" {
		revision += " (" + committed + ")"
	}
	return revision
}
