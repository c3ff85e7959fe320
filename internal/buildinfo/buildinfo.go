// Package buildinfo describes the running binary from what the Go toolchain
// stamps into it (module version, version-control revision, Go version), for
// the commands' --version. It imports only the standard library.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the binary's version line: the module version, then the commit
// it was built from, that commit's time and "dirty" when the tree had
// uncommitted changes (where the build recorded them), then the Go version:
//
//	v0.3.0 (commit 2e501fa1c0de, 2026-01-05T10:00:00Z, dirty) go1.26.0
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown) " + runtime.Version()
	}
	return format(bi)
}

func format(bi *debug.BuildInfo) string {
	out := bi.Main.Version
	if out == "" {
		out = "(devel)"
	}
	var vcs []string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			vcs = append(vcs, "commit "+s.Value[:min(len(s.Value), 12)])
		case s.Key == "vcs.time":
			vcs = append(vcs, s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			vcs = append(vcs, "dirty")
		}
	}
	if len(vcs) > 0 {
		out += " (" + strings.Join(vcs, ", ") + ")"
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return out + " " + goVersion
}
