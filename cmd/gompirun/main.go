package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/gompix/gompix/internal/gputopo"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/gompix/gompix/launcher"
)

const usage = `usage: gompirun [-n N] [flags] PROGRAM [ARGS...]

  -n, -np, --np N         number of ranks (default: all slots, or one per CPU)
  -H, --host h[:s],...    hosts and their slots
      --hostfile FILE     hosts from a file ("host slots=N" or "host:N" lines)
  -x NAME[=VALUE]         set NAME in every rank, or pass gompirun's value on
      --tag-output        prefix each output line with [1,<rank>]<stdout>:
      --timeout T         end the job after T seconds (or a duration: 30s);
                          exit status 124
      --gpu-bind POLICY   local (GPU = local rank % GPUs, default) or none
      --launch-agent CMD  command that starts ranks on other hosts (ssh)
  -h, --help              this help
      --version           print the version

Flags end at PROGRAM; what follows belongs to it.
`

func main() {
	os.Exit(gompirun(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// gompirun is main without the process exit, so tests can drive it.
func gompirun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args)
	var ue *usageError
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(stdout, usage)
		return 0
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "gompirun (gompix) %s %s\n", version(), runtime.Version())
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gompirun: %v\nRun 'gompirun --help' for usage.\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "gompirun: %v\n", err)
		return 1
	}
	cfg.Stdin, cfg.Stdout, cfg.Stderr = stdin, stdout, stderr

	// SIGINT/SIGTERM cancel the job with the signal as the cause; Run
	// forwards it to every rank and returns 128+signal. Handling them here
	// also keeps gompirun alive long enough to clean up.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			cancel(&launcher.SignalError{Signal: s.(syscall.Signal)})
		case <-ctx.Done():
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
	code, _ := launcher.Run(ctx, cfg) // Run has reported on stderr
	return code
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
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
