package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gompix/gompix/internal/wireup"
)

// Exit statuses Run returns besides a failed rank's own.
const (
	// ExitTimeout ends a job that ran past Config.Timeout (as timeout(1)).
	ExitTimeout = 124
	// ExitSetup: the job could not be set up or a rank could not be started.
	ExitSetup = 1
	// ExitNotFound: the program was not found (as a shell reports it).
	ExitNotFound = 127
	// ExitNotExecutable: the program was found but cannot be executed (not
	// executable, a directory, not a program), as a shell reports it.
	ExitNotExecutable = 126
	// ExitNoFinalize: a rank called Init and exited with status 0 without
	// Finalize (Open MPI ends such a job with a non-zero status too).
	ExitNoFinalize = 1
)

// ErrNoFinalize is wrapped by the error for a rank that joined the job (it
// called mpi.Init) and exited with status 0 without calling Finalize: its
// peers would wait for it until the timeout, so the launcher ends the job.
var ErrNoFinalize = errors.New("exited without calling Finalize")

// ErrTimeout is wrapped by the error Run returns when Config.Timeout ended
// the job.
var ErrTimeout = errors.New("job timed out")

// RankError reports a rank that failed: exited non-zero or was killed by a
// signal the launcher did not send.
type RankError struct {
	Rank   int
	Pid    int // on Host
	Host   string
	Status ExitStatus
	remote bool // Host is not this one: messages name it
}

func (e *RankError) Error() string {
	return fmt.Sprintf("%s %v", rankName(e.Rank, e.Pid, e.Host, e.remote), e.Status)
}

// rankName is how messages name a rank: "rank 3 (pid 42)", with the host
// for a remote rank ("rank 3 (pid 42 on node2)", or "rank 3 on node2"
// before its pid is known).
func rankName(rank, pid int, host string, remote bool) string {
	switch {
	case !remote:
		return fmt.Sprintf("rank %d (pid %d)", rank, pid)
	case pid > 0:
		return fmt.Sprintf("rank %d (pid %d on %s)", rank, pid, host)
	}
	return fmt.Sprintf("rank %d on %s", rank, host)
}

// SignalError is the cancellation cause a caller gives Run's context when
// the launcher itself received a signal (context.WithCancelCause). Run then
// forwards that signal to every rank and returns 128+signal. A context
// cancelled for any other reason is treated as SIGTERM.
type SignalError struct {
	Signal syscall.Signal
}

func (e *SignalError) Error() string {
	return fmt.Sprintf("received signal %d (%v)", int(e.Signal), e.Signal)
}

// Run starts the job cfg describes, waits for it, and returns the exit
// status gompirun should exit with:
//
//   - 0 when every rank exits 0;
//   - the first failed rank's status (128+signal for a signal) when a rank
//     fails; the other ranks are then sent SIGTERM and, after Grace, SIGKILL;
//   - 128+signal when ctx is cancelled (with a SignalError cause, that signal
//     is forwarded to every rank; otherwise SIGTERM is), then SIGKILL after
//     Grace;
//   - ExitNoFinalize when a rank that called Init exits 0 without Finalize
//     (an error wrapping ErrNoFinalize); the others are terminated as above;
//   - ExitTimeout when Config.Timeout ends the job;
//   - ExitSetup, ExitNotFound or ExitNotExecutable when the job could not be
//     started.
//
// The error describes every failure; with more than one it is a
// join of them (errors.Join), each a *RankError where a rank failed. Run
// also reports each event on Config.Stderr as it happens, prefixed
// "gompirun: ", so a command-line caller need not print the error again.
// When Run returns, every rank's process group has been sent SIGKILL, so no
// process of the job (a rank's background children included) outlives it,
// and the job's shared-memory files (wireup.ShmPrefix) have been removed.
func Run(ctx context.Context, cfg Config) (exitCode int, err error) {
	cfg, err = cfg.withDefaults()
	sink := &outputSink{stdout: cfg.Stdout, stderr: cfg.Stderr, tag: cfg.TagOutput}
	if sink.stdout == nil {
		sink.stdout = os.Stdout
	}
	if sink.stderr == nil {
		sink.stderr = os.Stderr
	}
	setupFailed := func(code int, err error) (int, error) {
		sink.message(err.Error())
		return code, err
	}
	if err != nil {
		return setupFailed(ExitSetup, err)
	}
	xenv, err := exportedEnv(cfg.Env, os.LookupEnv)
	if err != nil {
		return setupFailed(ExitSetup, err)
	}
	lay := layout{byNode: cfg.MapBy == MapByNode, perNode: cfg.PerNode, oversubscribe: cfg.Oversubscribe}
	places, err := place(cfg.NP, cfg.Hosts, lay, isLocalHost)
	if err != nil {
		return setupFailed(ExitSetup, err)
	}
	j := &job{cfg: cfg, sink: sink, places: places}
	if cfg.MPS {
		if slices.ContainsFunc(places, func(p placement) bool { return !p.local }) {
			// The daemon is this host's: ranks elsewhere would be handed a
			// pipe directory that does not exist there.
			return setupFailed(ExitSetup, errors.New("--mps starts the MPS daemon on this host only; start one on each host and run without --mps"))
		}
		m, err := startMPS(os.Environ())
		if err != nil {
			return setupFailed(ExitSetup, err)
		}
		defer m.stop(sink)
		xenv = append(xenv, m.env...)
	}
	return j.run(ctx, xenv)
}

// job is one Run's state; only the goroutine running Run touches it after
// the ranks start (the per-rank goroutines talk to it through channels).
type job struct {
	cfg    Config
	sink   *outputSink
	places []placement

	srv    *wireup.Server
	procs  []Proc
	agents []*hostAgent // one per remote host, in host order
	exited []bool
	sent   []uint64 // per rank: bit s set when signal s was sent to it

	stdinW *os.File // the launcher's end of rank 0's stdin pipe, if any
}

type exitEvent struct {
	rank   int
	status ExitStatus
	err    error
}

// newSecret returns n random bytes in hex.
func newSecret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func (j *job) run(ctx context.Context, xenv []string) (int, error) {
	secret, err := newSecret(32)
	if err != nil {
		return ExitSetup, fmt.Errorf("job secret: %w", err)
	}
	jobID, err := newSecret(8)
	if err != nil {
		return ExitSetup, fmt.Errorf("job id: %w", err)
	}
	addr, err := j.listen(secret)
	if err != nil {
		j.sink.message(err.Error())
		return ExitSetup, err
	}
	defer j.srv.Close()
	stdin, err := j.rank0Stdin()
	if err != nil {
		j.sink.message(err.Error())
		return ExitSetup, err
	}
	shmGlob := filepath.Join(shmDir, wireup.ShmPrefix(jobID)) + "*"
	l := &launch{
		base: os.Environ(), xenv: xenv, addr: addr, secret: secret, jobID: jobID, stdin: stdin,
		// Started before the first rank, so that no rank's process group
		// can outlive a launcher killed outright (SIGKILL).
		wd:    startWatchdog(shmGlob),
		exits: make(chan exitEvent, len(j.places)),
	}
	if j.cfg.GPUBind == GPUBindLocal {
		l.ngpus = j.cfg.GPUCount()
	}
	if err := j.placeLocal(l); err != nil {
		j.sink.message(err.Error())
		return ExitSetup, err
	}
	var startErr error
	for rank, pl := range j.places {
		if !pl.local {
			j.addRemote(l, rank, pl)
			continue
		}
		if startErr = j.startRank(l, rank, pl); startErr != nil {
			break
		}
	}
	// Our copy of the pipe's read end: a local rank 0 has its own; for a
	// remote one the launcher reads it (launchAgents).
	remote0 := !j.places[0].local
	if f, ok := stdin.(*os.File); ok && f != j.cfg.Stdin && (!remote0 || startErr != nil) {
		f.Close()
	}
	j.launchAgents(l, startErr)

	code, err := j.supervise(ctx, l.exits, startErr)
	j.endJob(l)
	// The job's processes are gone, so no segment can be made any more:
	// remove what a rank killed between creating one and unlinking it left.
	removeSegments(shmGlob)
	l.wd.release()
	return code, err
}

// launch is what starting the ranks of one job shares.
type launch struct {
	base, xenv          []string // the launcher's environment; -x variables
	addr, secret, jobID string
	ngpus               int           // GPUs a rank may be bound to (--gpu-bind local)
	binds               []rankBinding // by local rank, when the launcher places ranks (placement.go)
	stdin               io.Reader
	wd                  *watchdog
	exits               chan exitEvent
	readers             sync.WaitGroup // the output copiers
	readEnds            []*os.File     // the launcher's ends of the ranks' output pipes
}

// listen starts the job's wire-up store and returns the address ranks
// dial: loopback for a job on this host only, else an address the other
// hosts reach (listenIP).
func (j *job) listen(secret string) (string, error) {
	remote := ""
	if i := slices.IndexFunc(j.places, func(p placement) bool { return !p.local }); i >= 0 {
		remote = j.places[i].host
	}
	ip := "127.0.0.1"
	if remote != "" || j.cfg.Iface != "" {
		var err error
		if ip, err = listenIP(j.cfg.Iface, remote); err != nil {
			return "", err
		}
	}
	srv, err := wireup.NewServer(len(j.places), secret, net.JoinHostPort(ip, "0"))
	if err != nil {
		return "", err
	}
	j.srv = srv
	return srv.Addr(), nil
}

// startRank starts a rank placed on this host, with its output copied to the
// sink and its exit reported on l.exits.
func (j *job) startRank(l *launch, rank int, pl placement) error {
	forward := j.rankEnv(l, rank, pl)
	spec := ProcSpec{
		Rank: rank, Host: pl.host,
		Program: j.cfg.Program, Args: j.cfg.Args,
		Env: append(slices.Clone(l.base), forward...),
		// The secret travels apart (ProcSpec.Secret), never on a
		// command line.
		Forward: slices.DeleteFunc(slices.Clone(forward), func(kv string) bool {
			return strings.HasPrefix(kv, wireup.EnvJobSecret+"=")
		}),
		Secret: l.secret,
	}
	if rank == 0 && l.stdin != nil {
		spec.Stdin = l.stdin
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	spec.Stdout, spec.Stderr = outW, errW
	var p Proc
	err = startBound(l.cpusOf(pl), func() (err error) { p, err = LocalStarter{}.Start(spec); return err })
	outW.Close() // the rank holds its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fmt.Errorf("cannot start rank %d on %s: %w", rank, pl.host, err)
	}
	j.procs = append(j.procs, p)
	if lp, ok := p.(*localProc); ok {
		l.wd.watch(lp.Pid())
	}
	l.readEnds = append(l.readEnds, outR, errR)
	l.readers.Add(2)
	go func() { defer l.readers.Done(); j.sink.copyLines(rank, false, outR) }()
	go func() { defer l.readers.Done(); j.sink.copyLines(rank, true, errR) }()
	go func() {
		st, err := p.Wait()
		l.exits <- exitEvent{rank, st, err}
	}()
	return nil
}

// rankEnv is what the launcher sets in rank's environment: the -x
// variables, then the job contract.
func (j *job) rankEnv(l *launch, rank int, pl placement) []string {
	je := wireup.JobEnv{
		Rank: rank, Size: len(j.places),
		LocalRank: pl.localRank, LocalSize: pl.localSize,
		Node: pl.node, Addr: l.addr, Secret: l.secret,
		GPU: wireup.NoGPU, JobID: l.jobID,
	}
	if l.ngpus > 0 && pl.local {
		je.GPU = pl.localRank % l.ngpus
	}
	extra := j.bindEnv(l, pl, &je)
	return append(append(slices.Clone(l.xenv), extra...), je.Environ()...)
}

// endJob kills what is left of the job's processes and drains their output.
func (j *job) endJob(l *launch) {
	// Ranks' leftover children (background jobs of a shell rank, say) die
	// with the job.
	for _, p := range j.procs {
		if _, remote := p.(*remoteProc); !remote {
			p.Signal(syscall.SIGKILL)
		}
	}
	j.finishAgents()
	if j.stdinW != nil {
		j.stdinW.Close()
	}
	// Every process of the job is gone, so the pipes reach EOF once drained.
	// Only a process that escaped its group (setsid) could hold them open:
	// do not wait for it beyond the grace period.
	drained := make(chan struct{})
	go func() { l.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(j.cfg.Grace):
		for _, f := range l.readEnds {
			f.Close()
		}
		<-drained
	}
	for _, f := range l.readEnds {
		f.Close()
	}
}

// shmDir is where the ranks' shared-memory segments live (internal/shm).
var shmDir = "/dev/shm"

// removeSegments removes every file matching glob (the job's segments).
func removeSegments(glob string) {
	names, _ := filepath.Glob(glob)
	for _, name := range names {
		os.Remove(name)
	}
}

// rank0Stdin returns what rank 0 reads: the caller's *os.File as is, a pipe
// fed by a goroutine for any other reader, or nil (/dev/null).
//
// A terminal is never handed over: rank 0 leads its own process group, which
// is not the terminal's foreground group, so reading the terminal would stop
// it with SIGTTIN. The launcher, in the foreground, reads it instead.
func (j *job) rank0Stdin() (io.Reader, error) {
	in := j.cfg.Stdin
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
			return f, nil
		}
	}
	switch in.(type) {
	case nil:
		return nil, nil
	default:
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		j.stdinW = w
		go func() {
			io.Copy(w, in)
			w.Close()
		}()
		return r, nil
	}
}

// supervise waits for every started rank to end, turning failures, ctx and
// the timeout into termination, and returns the job's status and error.
func (j *job) supervise(ctx context.Context, exits <-chan exitEvent, startErr error) (int, error) {
	s := &supervisor{j: j, ctx: ctx, done: ctx.Done(), running: len(j.procs)}
	j.exited = make([]bool, s.running)
	j.sent = make([]uint64, s.running)
	defer s.stopTimers()
	if j.cfg.Timeout > 0 {
		s.timeout = time.NewTimer(j.cfg.Timeout)
		s.timeoutC = s.timeout.C
	}
	if startErr != nil {
		s.fail(startCode(startErr), startErr)
		s.terminate(syscall.SIGTERM)
	}
	for s.running > 0 {
		select {
		case ev := <-exits:
			s.rankExited(ev)
		case <-s.done:
			s.interrupted()
		case <-s.timeoutC:
			s.timedOut()
		case <-s.graceC:
			s.graceOver()
		case <-s.lostC:
			s.hostsLost()
		case sig := <-j.cfg.Signals:
			s.forward(sig)
		}
	}
	return s.result()
}

// supervisor is supervise's state: what has gone wrong so far and the
// channels still to wait on (nil once they have fired).
type supervisor struct {
	j       *job
	ctx     context.Context
	running int // ranks not yet reaped

	code        int
	errs        []error
	terminating bool // the ranks have been told to end

	timeout, grace *time.Timer
	done           <-chan struct{}
	timeoutC       <-chan time.Time
	graceC, lostC  <-chan time.Time
}

func (s *supervisor) stopTimers() {
	if s.timeout != nil {
		s.timeout.Stop()
	}
	if s.grace != nil {
		s.grace.Stop()
	}
}

// fail reports err and records it; the first failure's code is the job's
// status.
func (s *supervisor) fail(code int, err error) {
	s.j.sink.message(err.Error())
	s.record(code, err)
}

func (s *supervisor) record(code int, err error) {
	s.errs = append(s.errs, err)
	if s.code == 0 {
		s.code = code
	}
}

// terminate sends sig to the running ranks and starts the grace period
// after which they are killed.
func (s *supervisor) terminate(sig syscall.Signal) {
	s.terminating = true
	s.j.signalRunning(sig)
	s.grace = time.NewTimer(s.j.cfg.Grace)
	s.graceC = s.grace.C
}

// rankExited reaps a rank; a failure ends the job, with the first failure's
// status.
func (s *supervisor) rankExited(ev exitEvent) {
	s.running--
	s.j.exited[ev.rank] = true
	if ev.rank == 0 && s.j.stdinW != nil {
		s.j.stdinW.Close() // stop feeding a rank that is gone
	}
	rcode, rerr := s.j.exitError(ev, s.terminating)
	if rerr == nil {
		return
	}
	s.fail(rcode, rerr)
	if !s.terminating {
		s.terminate(syscall.SIGTERM)
	}
}

// interrupted handles ctx's cancellation: the first ends the job with the
// cause's signal (SIGTERM for another cause); a second while ending it
// kills the ranks at once.
func (s *supervisor) interrupted() {
	s.done = nil
	if s.terminating {
		// Asked again while already ending the job: stop waiting.
		s.j.signalRunning(syscall.SIGKILL)
		return
	}
	sig := syscall.SIGTERM
	var se *SignalError
	if errors.As(context.Cause(s.ctx), &se) {
		sig = se.Signal
	}
	err := fmt.Errorf("job interrupted: %w", context.Cause(s.ctx))
	s.j.sink.message(fmt.Sprintf("%v; terminating %d rank(s)", err, s.running))
	s.record(128+int(sig), err)
	s.terminate(sig)
}

// timedOut ends the job at Config.Timeout, unless it is ending already.
func (s *supervisor) timedOut() {
	s.timeoutC = nil
	if s.terminating {
		return
	}
	s.fail(ExitTimeout, fmt.Errorf("%w after %v", ErrTimeout, s.j.cfg.Timeout))
	s.terminate(syscall.SIGTERM)
}

// graceOver kills the ranks that outlived the grace period.
func (s *supervisor) graceOver() {
	s.graceC = nil
	s.j.signalRunning(syscall.SIGKILL)
	s.lostC = time.After(s.j.cfg.Grace)
}

// hostsLost: a host whose ranks outlive SIGKILL by a grace period is not
// answering: drop its agent, which fails its ranks.
func (s *supervisor) hostsLost() {
	s.lostC = nil
	s.j.dropAgents()
}

// forward passes a signal from Config.Signals to the running ranks. It is
// not remembered as sent: a rank it kills (it has no handler) failed on its
// own account.
func (s *supervisor) forward(sig syscall.Signal) {
	for r, p := range s.j.procs {
		if !s.j.exited[r] {
			p.Signal(sig)
		}
	}
}

// result is the job's status and its errors, joined when there are several.
func (s *supervisor) result() (int, error) {
	if len(s.errs) == 1 {
		return s.code, s.errs[0]
	}
	return s.code, errors.Join(s.errs...) // nil without errors
}

// startCode is the job's exit status when starting a rank failed: the
// shell's 127 for a program not found, 126 for one that cannot run.
func startCode(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return ExitNotExecutable
	}
	return ExitSetup
}

// exitError says whether a rank's exit ends the job, with the job's exit
// status and the error to report; nil for an exit that is no failure (or
// one the launcher caused). A rank that leaves with status 0 after Init but
// without Finalize ends the job too: its peers would wait for it.
func (j *job) exitError(ev exitEvent, terminating bool) (int, error) {
	pid := j.procs[ev.rank].Pid()
	_, remote := j.procs[ev.rank].(*remoteProc)
	name := rankName(ev.rank, pid, j.places[ev.rank].host, remote)
	switch {
	case ev.err != nil:
		return startCode(ev.err), fmt.Errorf("%s: %w", name, ev.err)
	case ev.status.Failed() && !j.causedByUs(ev.rank, ev.status):
		return ev.status.ShellCode(), &RankError{Rank: ev.rank, Pid: pid, Host: j.places[ev.rank].host, Status: ev.status, remote: remote}
	case !ev.status.Failed() && !terminating && j.leftWithoutFinalize(ev.rank):
		return ExitNoFinalize, fmt.Errorf("%s %w after Init; ending the job, whose other ranks would wait for it",
			name, ErrNoFinalize)
	}
	return 0, nil
}

// signalRunning sends sig to every rank not yet reaped, remembering it so the
// resulting deaths are not reported as failures. Any signal but SIGKILL is
// followed by SIGCONT: a stopped rank (SIGSTOP, a debugger, Ctrl-Z) would
// otherwise hold the signal pending until the SIGKILL a grace period later.
func (j *job) signalRunning(sig syscall.Signal) {
	for r, p := range j.procs {
		if j.exited[r] {
			continue
		}
		j.sent[r] |= 1 << uint(sig)
		p.Signal(sig)
		if sig != syscall.SIGKILL {
			p.Signal(syscall.SIGCONT)
		}
	}
}

// leftWithoutFinalize reports whether rank joined the job's store (it
// called Init) and has not said it finalized. A program that never calls
// Init (gompirun -n 2 hostname) never joins.
func (j *job) leftWithoutFinalize(rank int) bool {
	if j.srv == nil {
		return false
	}
	joined, finalized := j.srv.Rank(rank)
	return joined && !finalized
}

// causedByUs reports whether status is explained by a signal the launcher
// sent rank: death by that signal, or the 128+signal status of a shell or
// a handler that exits the conventional way.
func (j *job) causedByUs(rank int, st ExitStatus) bool {
	sent := j.sent[rank]
	if sent == 0 {
		return false
	}
	if st.Signal != 0 {
		return sent&(1<<uint(st.Signal)) != 0
	}
	s := st.Code - 128
	return s > 0 && s < 64 && sent&(1<<uint(s)) != 0
}
