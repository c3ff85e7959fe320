package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the gompix command. Subcommands add themselves to it from
// their own files' init functions (rootCmd.AddCommand), as osu.go and
// info.go do.
var rootCmd = &cobra.Command{
	Use:   "gompix",
	Short: "gompix tools: OSU micro-benchmarks, installation info",
	Long: `gompix is the command-line tool of gompix, a GPU-aware MPI for Go.

Run benchmarks as ranks of a job started by gompirun:

  gompirun -n 2 gompix osu latency -m 1:1048576
  gompirun -n 4 gompix osu allreduce -f -c`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitError carries a subcommand's exit status through cobra.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// execute runs the root command with args and returns the exit status.
func execute(args []string) int {
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
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
