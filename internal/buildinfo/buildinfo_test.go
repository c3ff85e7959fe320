package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-compiler", Value: "gc"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "2e501fa1c0de0123456789abcdef0123456789ab"},
		{Key: "vcs.time", Value: "2026-01-05T10:00:00Z"},
	}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0 go1.26.0"},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.0"}, "(devel) go1.26.0"},
		{"clean checkout", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"},
			Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "false"})},
			"v0.3.0 (commit 2e501fa1c0de, 2026-01-05T10:00:00Z) go1.26.0"},
		{"dirty tree", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			"(devel) (commit 2e501fa1c0de, 2026-01-05T10:00:00Z, dirty) go1.26.0"},
		{"short revision", debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}},
			"(devel) (commit abc) go1.26.0"},
	} {
		if got := format(&tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersion: the test binary has build info; its line ends in the Go
// version it runs on.
func TestVersion(t *testing.T) {
	if v := Version(); !strings.HasSuffix(v, " "+runtime.Version()) {
		t.Errorf("Version() = %q, want it to end in %q", v, runtime.Version())
	}
}
