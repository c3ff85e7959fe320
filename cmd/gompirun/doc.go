// Command gompirun starts a gompix job: gompirun -n N [flags] PROGRAM [ARGS].
//
// It starts N processes of any program (gompirun -n 2 hostname works), gives
// each the job environment (GOMPIX_RANK, GOMPIX_SIZE, ...; see
// internal/wireup), streams their output line by line, and exits with the
// job's status: 0 when every rank exits 0, the first failed rank's status
// (128+signal for a signal) otherwise, 124 when --timeout ends the job, 130
// or 143 when gompirun is interrupted by SIGINT or SIGTERM (the signal is
// forwarded to every rank first), 127 or 126 when the program is not found
// or not executable, 1 when a rank exits without calling mpi.Finalize after
// mpi.Init or the job cannot start, 2 for a usage error. SIGUSR1 and SIGUSR2
// are forwarded to every rank. Ranks on other hosts (-H, --hostfile, or a
// Slurm allocation's nodes) are started by one gompirun host agent per host
// (gompirun --host-agent, run through --launch-agent), which the launcher
// supervises like local ranks.
//
// Flags follow mpirun's habits and parsing stops at the program name, so
// flags after it belong to the program:
//
//	-n, -np, --np N        number of ranks (also --n=N, --np=N); more than
//	                       the CPUs only with --oversubscribe, as mpirun
//	--oversubscribe        allow more ranks than CPUs or slots
//	-H, --host h:s,...     hosts and their slots (slots default to 1)
//	--hostfile FILE        lines of "host [slots=N]" or "host:N"; # comments
//	-x NAME[=VAL]          set NAME in every rank, or copy gompirun's value
//	--tag-output           prefix lines with [1,<rank>]<stdout>: / <stderr>:
//	--timeout T            end the job after T seconds (or a Go duration: 30s);
//	                       MPIEXEC_TIMEOUT gives the default
//	--gpu-bind local|none  GPU binding policy (local: local_rank % ngpus)
//	--map-by slot|node     fill hosts slot by slot, or deal ranks to them in turn
//	-N, --npernode K       K ranks on every host
//	--launch-agent CMD     starts the host agents: CMD HOST COMMAND, as ssh
//	                       (default ssh, $GOMPIX_LAUNCH_AGENT; srun in Slurm)
//	--agent-path PATH      gompirun on the other hosts ($GOMPIX_AGENT_PATH)
//	--iface NAME|CIDR      where the wire-up store listens ($GOMPIX_IFACE)
//	-h, --help; --version  (the version names the commit and Go release)
//
// Every long flag may be written with one dash or two, and with its value
// after "=" or as the next argument; a normalising step turns these mpirun
// spellings into the ones pflag parses. "gompirun completion bash" (zsh,
// fish) prints a shell completion script; a program named "completion" is
// started after "--".
//
// Layer: the top of the launcher stack. It imports launcher and internal
// packages only; all job logic lives in launcher, so this package is the
// argument parser, signal wiring and the exit status.
//
// Concurrency: main runs the job on its goroutine; one goroutine turns
// SIGINT/SIGTERM into cancellation of the job's context and passes
// SIGUSR1/SIGUSR2 on to the ranks.
package main
