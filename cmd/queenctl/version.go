package main

import (
	"runtime/debug"
	"strings"
)

// This is a copy of the broker module's internal/version (String, Describe, FromBuildInfo),
// kept here so that queenctl's own code imports only the Go client: queenctl is a module of
// its own (docs/decisions.md "queenctl is a module of its own") and its binary links nothing of the
// broker. version_test.go compares the two on the same build information, so they cannot drift.

// versionUnknown is the version of a binary that carries none (internal/version.Unknown).
const versionUnknown = "dev"

// versionUnknownWhy is what versionDescribe adds to versionUnknown: a user who sees a bare
// "dev" cannot tell a stale binary from a fresh one, nor report it.
const versionUnknownWhy = "no version recorded: built by go run, outside a git checkout or with -buildvcs=false; " +
	"make build or go build -buildvcs=true names the commit"

// versionDescribe is the output of --version: stamped (main.version, set with
// -ldflags "-X main.version=…") when not empty, else what the build information holds, else
// versionUnknown with the reason.
func versionDescribe(stamped string) string {
	v := versionResolve(stamped, debug.ReadBuildInfo)
	if v == versionUnknown {
		return versionUnknown + " (" + versionUnknownWhy + ")"
	}
	return v
}

// versionResolve is stamped, else the version read's build information records, else
// versionUnknown.
func versionResolve(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if v := strings.TrimSpace(stamped); v != "" {
		return v
	}
	if info, ok := read(); ok {
		return versionFromBuildInfo(info)
	}
	return versionUnknown
}

// versionFromBuildInfo returns the version recorded in a binary's build information: the main
// module's version when the toolchain knew one, otherwise the first 12 digits of the VCS
// revision with "-dirty" for a modified tree and the commit's time, otherwise versionUnknown.
func versionFromBuildInfo(info *debug.BuildInfo) string {
	if info == nil {
		return versionUnknown
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
		return versionUnknown
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
