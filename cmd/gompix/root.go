package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/spf13/cobra"
)

// newRootCmd builds the gompix command afresh for each run (cobra keeps
// state in a command, the output of its completion command among it).
// cobra adds "gompix completion bash|zsh|fish"; the version line names the
// commit and the Go release (internal/buildinfo).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gompix",
		Short: "gompix tools: OSU micro-benchmarks, charts of their results, installation info",
		Long: `gompix is the command-line tool of gompix, a GPU-aware MPI for Go.

Run benchmarks as ranks of a job started by gompirun:

  gompirun -n 2 gompix osu latency -m 1:1048576
  gompirun -n 4 gompix osu allreduce -f -c`,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("gompix {{.Version}}\n")
	root.AddCommand(newOSUCmd(), newInfoCmd(), newPlotCmd())
	return root
}

// exitError carries a subcommand's exit status through cobra.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// execute runs the gompix command with args and returns the exit status;
// its output goes to stdout.
func execute(args []string, stdout io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(os.Stderr, "gompix:", err)
		return 2
	}
}
