package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "33dfbaf2f5a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4"}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"nil", nil, Unknown},
		{"go install at a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"pseudo-version from the VCS", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201180849-33dfbaf2f5a0+dirty"}},
			"v0.0.0-20261201180849-33dfbaf2f5a0+dirty"},
		{"devel with revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{rev}},
			"33dfbaf2f5a0"},
		{"devel with modified tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "true"}}}, "33dfbaf2f5a0-dirty"},
		{"short revision", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "abc"},
		// The commit's time says how old a build from a revision is.
		{"revision with commit time", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{rev, {Key: "vcs.time", Value: "2026-12-01T18:08:49Z"}}},
			"33dfbaf2f5a0 (2026-12-01T18:08:49Z)"},
		{"dirty revision with commit time", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{rev, {Key: "vcs.time", Value: "2026-12-01T18:08:49Z"}, {Key: "vcs.modified", Value: "true"}}},
			"33dfbaf2f5a0-dirty (2026-12-01T18:08:49Z)"},
		{"devel without VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromBuildInfo(tc.info); got != tc.want {
				t.Fatalf("FromBuildInfo = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tagged := func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true }
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	if got := resolve("v2.0.0-3-gabcdef0", tagged); got != "v2.0.0-3-gabcdef0" {
		t.Errorf("stamped version lost: %q", got)
	}
	if got := resolve(" ", tagged); got != "v1.2.3" {
		t.Errorf("blank stamp: %q; want the build info's version", got)
	}
	if got := resolve("", none); got != Unknown {
		t.Errorf("no build info: %q; want %q", got, Unknown)
	}
}

func TestStringOfTestBinary(t *testing.T) {
	// A test binary has build information but no stamp; whatever it holds, String answers.
	if got := String(""); got == "" {
		t.Fatal("String returned an empty version")
	}
	if got := String("v9"); got != "v9" {
		t.Fatalf("String(v9) = %q", got)
	}
}

// TestDescribe: --version never prints a bare "dev", which reads like a real version; every
// known version is printed as it is.
func TestDescribe(t *testing.T) {
	for _, v := range []string{"v1.2.3", "v0.0.0-20261201180849-33dfbaf2f5a0+dirty", "33dfbaf2f5a0 (2026-12-01T18:08:49Z)"} {
		if got := describe(v); got != v {
			t.Errorf("describe(%q) = %q", v, got)
		}
	}
	got := describe(Unknown)
	for _, want := range []string{"dev (", "-buildvcs=false", "make build"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe(Unknown) = %q; want it to contain %q", got, want)
		}
	}
	if got := Describe("v9"); got != "v9" {
		t.Errorf("Describe(v9) = %q", got)
	}
}
