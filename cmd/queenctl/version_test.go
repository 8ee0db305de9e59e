package main

import (
	"runtime/debug"
	"testing"

	buildversion "github.com/queen-go/queen/internal/version"
)

// TestVersionMatchesBroker keeps version.go, a copy, in step with the broker's
// internal/version: both name the same build the same way.
func TestVersionMatchesBroker(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []*debug.BuildInfo{
		nil,
		{},
		{Main: debug.Module{Version: "(devel)"}},
		{Main: debug.Module{Version: "v1.2.3"}},
		{Main: debug.Module{Version: "v0.0.0-20261201180849-0123456789ab+dirty"}},
		{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}}},
		{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
		{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-01T18:08:49Z"}, {Key: "vcs.modified", Value: "true"}}},
	}
	for i, info := range cases {
		if got, want := versionFromBuildInfo(info), buildversion.FromBuildInfo(info); got != want {
			t.Errorf("case %d: queenctl %q, broker %q", i, got, want)
		}
	}
	for _, stamped := range []string{"", " 1.2.3 "} {
		if got, want := versionDescribe(stamped), buildversion.Describe(stamped); got != want {
			t.Errorf("stamped %q: queenctl %q, broker %q", stamped, got, want)
		}
	}
}
