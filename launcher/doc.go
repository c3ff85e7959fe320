// Package launcher starts and supervises the processes of a gompix job: the
// library behind gompirun (and behind tests that re-exec their own binary as
// ranks).
//
// Run places NP ranks on hosts (by slot or by node, -N ranks per host),
// starts the wire-up key-value server (internal/wireup) with a fresh per-job
// secret, starts every rank with the job environment, streams the ranks'
// output line by line,
// and ends the job the way mpirun users expect: when a rank fails, the others
// are terminated (SIGTERM with SIGCONT, then SIGKILL after a grace period)
// and the job's exit status is the failed rank's; a rank that called Init
// and exits 0 without Finalize ends the job too (ErrNoFinalize); an
// interrupt reaches every rank, and Config.Signals (SIGUSR1, SIGUSR2 in
// gompirun) are forwarded without ending the job; a timeout ends a hung job
// with status 124; no process survives the job.
//
// Shared memory: every job has an id (GOMPIX_JOB_ID) that the ranks put in
// their segments' names (wireup.ShmPrefix), and the launcher removes every
// /dev/shm file with that prefix when the job ends, so a rank killed between
// creating a segment and unlinking it leaks no memory.
//
// Hosts: ranks on this host are started directly (LocalStarter). Every
// other host gets one host agent: gompirun itself in its agent mode
// (HostAgentArg, AgentMain), run through the launch agent (ssh, srun in a
// Slurm allocation, or any ssh-like command). The launcher writes that
// host's job (ranks, environment, working directory, wire-up address, job
// id, secret) as the first line of the agent's stdin and keeps stdin as
// the control channel (signals for a rank, "end"); the agent starts the
// ranks, each in its own process group, and sends their output lines, pids
// and exits back in frames on its stdout (agentproto.go). A remote rank is
// a Proc like a local one, so supervision is the same across hosts: its
// exit is an event, its Signal a control line. When the agent's stdin
// closes without "end" (the launcher died) it terminates its ranks and
// removes the host's segments of the job; it removes them when the job
// ends normally too. The wire-up store listens on loopback for a job on
// this host only, else on Config.Iface or the address of the route toward
// the first remote host.
//
// The job secret reaches ranks in their environment only: remote ones
// through the agent's stdin, never on a command line, and no message
// shows it.
//
// Layer: above internal/wireup, below cmd/gompirun. It may import
// internal/wireup and the standard library; GPU discovery
// (go-nvml) is plugged in through Config.GPUCount rather than imported here,
// so the launcher builds and is tested without a GPU. No cgo.
//
// Process model: every rank is the leader of its own process group (Setpgid),
// and every signal the launcher sends goes to the group, so a rank that is a
// shell script or forks helpers is ended with all its children. On Linux the
// ranks also get PR_SET_PDEATHSIG(SIGKILL), so they die if the launcher itself
// is killed without a chance to clean up; and a small watchdog shell, told
// every rank's group, kills those groups (the ranks' own children with them)
// and removes the job's segments when the launcher's end of its stdin
// closes without a word that the job ended normally.
//
// Concurrency: Run is safe to call from several goroutines at once (each
// call is an independent job). It owns one goroutine per rank waiting for the
// process, two per local rank copying output, three per host agent
// (reading its stdout and stderr, writing its stdin), one passing stdin to
// a remote rank 0, and the supervising loop on the caller's goroutine; all
// of them have ended when Run returns, except one blocked in a Read of
// Config.Stdin (a non-*os.File one copied for rank 0, or a pipe passed to
// a remote rank 0; see Config.Stdin).
// Output lines are written to Config.Stdout/Stderr one Write per line under
// one lock, so lines of different ranks never interleave.
package launcher
