package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/gompix/gompix/internal/gputopo"
	"github.com/gompix/gompix/launcher"
	"github.com/spf13/cobra"
)

const usage = `usage: gompirun [-n N] [flags] PROGRAM [ARGS...]

  -n, -np, --np N         number of ranks (default: all slots, or one per CPU)
      --oversubscribe     allow more ranks than CPUs (or than the hosts' slots)
  -H, --host h[:s],...    hosts and their slots (each host once)
      --hostfile FILE     hosts from a file ("host slots=N" or "host:N" lines)
                          (also -machinefile)
      --map-by POLICY     slot: fill each host's slots in turn (default);
                          node: deal ranks to the hosts in turn; numa: deal
                          a host's ranks to its NUMA nodes in turn; gpu:
                          local rank r on GPU r mod GPUs, CPUs on its node
      --bind-to core|numa|none
                          bind each rank to a core (of its GPU's NUMA node)
                          or to its NUMA node, or bind nothing (default: each
                          rank binds its main thread to a core of its own)
      --report-bindings   print each local rank's CPUs, NUMA node, GPU, NIC
      --mps               run the ranks under an MPS daemon (the one running,
                          else one started for the job and stopped after)
  -N, --npernode K        K ranks on every host
  -x NAME[=VALUE]         set NAME in every rank, or pass gompirun's value on
      --tag-output        prefix each output line with [1,<rank>]<stdout>:
      --timeout T         end the job after T seconds (or a duration: 30s);
                          exit status 124; default: $MPIEXEC_TIMEOUT seconds
      --gpu-bind POLICY   local (GPU = local rank % GPUs, default) or none
      --launch-agent CMD  starts gompirun's agent on other hosts, run as
                          CMD HOST COMMAND (default ssh; $GOMPIX_LAUNCH_AGENT);
                          a word with %h gets the host instead
      --agent-path PATH   gompirun on the other hosts (default: this one's
                          path; $GOMPIX_AGENT_PATH)
      --iface NAME|CIDR   where the wire-up store listens ($GOMPIX_IFACE;
                          default: the address toward the first remote host)
  -h, --help              this help
      --version           print the version (and the commit it was built from)

gompirun completion bash|zsh|fish prints a shell completion script.

Flags end at PROGRAM; what follows belongs to it.

Ranks on this host are started directly; every other host gets one agent
(gompirun itself, started through the launch agent) that starts its ranks
and relays their output. Inside a Slurm allocation, with no -H or
--hostfile, the allocation's nodes and tasks are the hosts and slots, and
the agents are started with srun.

A failing rank ends the job on every host. SIGINT and SIGTERM end the job
(status 128+signal); SIGUSR1 and SIGUSR2 are forwarded to every rank and
the job goes on.
`

func main() {
	os.Exit(gompirun(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// gompirun is main without the process exit, so tests can drive it.
func gompirun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == launcher.HostAgentArg {
		return launcher.AgentMain(stdin, stdout, stderr, func(env []string) int {
			v, set := envLookup(env, gputopo.EnvVisibleDevices)
			return len(gputopo.Visible(v, set))
		}, func(env []string) []string {
			v, set := envLookup(env, gputopo.EnvVisibleDevices)
			return gputopo.VisibleBusIDs(v, set)
		})
	}
	code := 0
	cmd := newCommand(func(cfg launcher.Config) { code = launch(cfg, stdin, stdout, stderr) })
	cmd.SetArgs(mpirunForms(cmd.Flags(), args))
	if len(args) > 1 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) {
		// Completing: the last word is the one being typed, left as it is.
		cmd.SetArgs(append(append(args[:1:1], mpirunForms(cmd.Flags(), args[1:len(args)-1])...), args[len(args)-1]))
	}
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	var ue *usageError
	switch err := cmd.Execute(); {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gompirun: %v\nRun 'gompirun --help' for usage.\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "gompirun: %v\n", err)
		return 1
	}
	return code
}

// newCommand is gompirun as a cobra command, which gives it --help,
// --version and shell completion ("gompirun completion bash"); run starts
// the job the flags describe.
func newCommand(run func(launcher.Config)) *cobra.Command {
	p := &parser{readFile: os.ReadFile}
	cmd := &cobra.Command{
		Use:           "gompirun [-n N] [flags] PROGRAM [ARGS...]",
		Short:         "start a gompix job",
		Version:       buildinfo.Version(),
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := p.finish(args, os.Getenv)
			if err == nil {
				run(cfg)
			}
			return err
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault // the program and its arguments: files
		},
	}
	p.define(cmd.Flags())
	cmd.RegisterFlagCompletionFunc("map-by", cobra.FixedCompletions(
		[]string{launcher.MapBySlot, launcher.MapByNode, launcher.MapByNUMA, launcher.MapByGPU}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("bind-to", cobra.FixedCompletions(
		[]string{launcher.BindToCore, launcher.BindToNUMA, launcher.BindToNone}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("gpu-bind", cobra.FixedCompletions(
		[]string{launcher.GPUBindLocal, launcher.GPUBindNone}, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	cmd.SetVersionTemplate("gompirun (gompix) {{.Version}}\n")
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c.HasParent() { // the completion command's own help
			fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s", c.Long, c.UsageString())
			return
		}
		fmt.Fprint(c.OutOrStdout(), usage)
	})
	return cmd
}

// launch runs the job and returns gompirun's exit status.
func launch(cfg launcher.Config, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg.Stdin, cfg.Stdout, cfg.Stderr = stdin, stdout, stderr
	if n := runtime.NumCPU(); !cfg.Oversubscribe && len(cfg.Hosts) == 0 && cfg.NP > n {
		// As mpirun: a rank per CPU unless asked otherwise, since ranks
		// sharing CPUs distort every timing the job makes.
		fmt.Fprintf(stderr, "gompirun: %d ranks requested but this host has %d CPUs; "+
			"run with --oversubscribe to start more ranks than CPUs\n", cfg.NP, n)
		return launcher.ExitSetup
	}

	// SIGINT/SIGTERM cancel the job with the signal as the cause; Run
	// forwards it to every rank and returns 128+signal. Handling them here
	// also keeps gompirun alive long enough to clean up. SIGUSR1/SIGUSR2
	// (a batch system's warning before pre-emption) are passed on to the
	// ranks, as mpirun does, and the job goes on.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	forward := make(chan syscall.Signal, 4)
	cfg.Signals = forward
	go func() {
		for {
			select {
			case s := <-sigs:
				sig := s.(syscall.Signal)
				if sig == syscall.SIGUSR1 || sig == syscall.SIGUSR2 {
					select {
					case forward <- sig:
					default: // the job is not keeping up; a signal is dropped, as the kernel merges them
					}
					continue
				}
				cancel(&launcher.SignalError{Signal: sig})
				return
			case <-ctx.Done():
				return
			}
		}
	}()

	if cfg.GPUCount == nil {
		// --gpu-bind=local spreads ranks over the devices CUDA will show
		// them: a rank's GOMPIX_GPU is an ordinal among those.
		cfg.GPUCount = func() int {
			v, set := rankEnv(cfg.Env, gputopo.EnvVisibleDevices, os.LookupEnv)
			return len(gputopo.Visible(v, set))
		}
	}
	if cfg.GPUBusIDs == nil {
		cfg.GPUBusIDs = func() []string {
			v, set := rankEnv(cfg.Env, gputopo.EnvVisibleDevices, os.LookupEnv)
			return gputopo.VisibleBusIDs(v, set)
		}
	}
	code, _ := launcher.Run(ctx, cfg) // Run has reported on stderr
	return code
}

// rankEnv is the value of variable name in the ranks' environment: the
// last -x entry for it (the one that wins in the rank), else gompirun's
// own.
func rankEnv(xenv []string, name string, lookup func(string) (string, bool)) (string, bool) {
	for i := len(xenv) - 1; i >= 0; i-- {
		n, v, hasVal := strings.Cut(xenv[i], "=")
		if n != name {
			continue
		}
		if hasVal {
			return v, true
		}
		break // -x NAME passes gompirun's value
	}
	return lookup(name)
}

// envLookup is the value of name in env (NAME=VALUE entries; the last one
// wins, as in a process started with env).
func envLookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(env[i], "="); n == name {
			return v, true
		}
	}
	return "", false
}
