// Command gompix is gompix's tool: "gompix osu <benchmark> [OSU flags]"
// runs an OSU micro-benchmark (as a rank of a gompirun job), "gompix info"
// describes the installation. Installed (or symlinked) under an OSU binary
// name such as osu_latency, it runs that benchmark directly, so OSU job
// scripts work unchanged:
//
//	gompirun -n 2 gompix osu latency -m 1:4194304
//	ln -s gompix osu_bw && gompirun -n 2 ./osu_bw -W 32
//
// "gompix --version" names the build (module version, commit, Go release);
// "gompix completion bash" (zsh, fish) prints a shell completion script.
package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gompix/gompix/osu"
)

func main() {
	if name := filepath.Base(os.Args[0]); strings.HasPrefix(name, "osu_") {
		if _, ok := osu.Lookup(name); ok {
			os.Exit(osu.Main(name, os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(execute(os.Args[1:], os.Stdout))
}
