// Package version tells which build of queen-go is running, for `queen --version`, the
// `version` field of /health and the other commands' version output.
//
// A release build stamps the version into each command's main package with
//
//	go build -ldflags "-X main.version=$(git describe --tags --always --dirty)"
//
// (the Makefile's build and release targets do). A binary built without that flag, by
// `go build`, `go run` or `go install …@v1.2.3`, still tells what it was built from: the Go
// toolchain records the module version and the VCS revision in every binary, and String reads
// them with runtime/debug.ReadBuildInfo.
package version

import (
	"runtime/debug"
	"strings"
)

// Unknown is the version of a binary that carries none: built without the -X flag, outside
// a module version and without VCS information (for example with -buildvcs=false).
const Unknown = "dev"

// String returns the version of the running binary: stamped when it is not empty (the value
// of the main package's version variable, set with -ldflags "-X main.version=…"), otherwise
// what the build information holds, otherwise Unknown.
func String(stamped string) string {
	return resolve(stamped, debug.ReadBuildInfo)
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
// revision, with "-dirty" for a modified tree, otherwise Unknown.
func FromBuildInfo(info *debug.BuildInfo) string {
	if info == nil {
		return Unknown
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
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
	return revision
}
