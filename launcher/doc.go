// Package launcher starts and supervises the processes of a gompix job: the
// library behind gompirun (and behind tests that re-exec their own binary as
// ranks).
//
// Run places NP ranks on hosts, starts the wire-up key-value server
// (internal/wireup) with a fresh per-job secret, starts every rank through a
// Starter with the job environment, streams the ranks' output line by line,
// and ends the job the way mpirun users expect: when a rank fails, the others
// are terminated (SIGTERM, then SIGKILL after a grace period) and the job's
// exit status is the failed rank's; an interrupt reaches every rank; a
// timeout ends a hung job with status 124; no process survives the job.
//
// Layer: above internal/wireup, below cmd/gompirun. It may import
// internal/wireup, the standard library and go-multierror; GPU discovery
// (go-nvml) is plugged in through Config.GPUCount rather than imported here,
// so the launcher builds and is tested without a GPU. No cgo.
//
// Process model: every rank is the leader of its own process group (Setpgid),
// and every signal the launcher sends goes to the group, so a rank that is a
// shell script or forks helpers is ended with all its children. On Linux the
// ranks also get PR_SET_PDEATHSIG(SIGKILL), so they die if the launcher itself
// is killed without a chance to clean up.
//
// Concurrency: Run is safe to call from several goroutines at once (each
// call is an independent job). It owns one goroutine per rank waiting for the
// process, two per rank copying output, and the supervising loop on the
// caller's goroutine; all of them have ended when Run returns, except a copy
// of a non-*os.File Config.Stdin blocked in its Read (see Config.Stdin).
// Output lines are written to Config.Stdout/Stderr one Write per line under
// one lock, so lines of different ranks never interleave.
package launcher
