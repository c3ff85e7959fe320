package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/gompix/gompix/osu"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newOSUCmd is the command that runs one OSU benchmark. OSU's options are
// getopt-style (-m 1:4194304, -fc, -z50, trailing "D D") and differ from one
// benchmark to the next, so cobra does not parse them: everything after the
// benchmark name goes to osu.Parse. Completion offers the benchmark's
// options (osu.Flags).
func newOSUCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "osu BENCHMARK [OSU options] [SRC DST]",
		Short: "run an OSU micro-benchmark (latency, bw, allreduce, ...)",
		Long: `Run an OSU Micro-Benchmarks 7.4 benchmark, ported to gompix, with OSU's
options and output. Start it as every rank of a job:

  gompirun -n 2 gompix osu latency -m 1:1024 -i 1000
  gompirun -n 4 gompix osu allreduce -f -c -T mpi_float

"gompix osu BENCHMARK -h" lists a benchmark's options.`,
		DisableFlagParsing: true,
		ValidArgsFunction:  completeOSU,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
				printBenchmarks(cmd)
				return nil
			}
			if code := osu.Main(args[0], args[1:], cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}

func printBenchmarks(cmd *cobra.Command) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s\n\nUsage:\n  gompix %s\n\nBenchmarks:\n", strings.TrimSpace(cmd.Long), cmd.Use)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, b := range osu.Benchmarks() {
		fmt.Fprintf(tw, "  %s\t%s\n", b.Name(), b.Title())
	}
	tw.Flush()
}

// completeOSU offers the benchmarks' names, each with its title, then the
// named benchmark's options.
func completeOSU(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	if len(args) == 0 {
		for _, b := range osu.Benchmarks() {
			if strings.HasPrefix(b.Name(), toComplete) {
				out = append(out, b.Name()+"\t"+b.Title())
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	b, ok := osu.Lookup(args[0])
	if !ok || !strings.HasPrefix(toComplete, "-") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	osu.Flags(b).VisitAll(func(f *pflag.Flag) {
		for _, name := range []string{"--" + f.Name, "-" + f.Shorthand} {
			if name != "-" && strings.HasPrefix(name, toComplete) {
				out = append(out, name+"\t"+f.Usage)
			}
		}
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}
