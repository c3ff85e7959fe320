package launcher

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gompix/gompix/internal/wireup"
)

// AgentMain is gompirun's host-agent mode (HostAgentArg): it reads an
// agentJob from stdin, starts this host's ranks (each the leader of its own
// process group, with the job environment), relays their output and exits
// to the launcher in frames on stdout, and obeys control lines until the
// launcher says "end". If stdin ends first (the launcher or its connection
// died), or the agent gets SIGTERM, SIGINT or SIGHUP, it terminates the
// ranks' groups (SIGTERM, then SIGKILL after the job's grace period). Either
// way it removes the job's shared-memory segments on this host before it
// exits. gpuCount reports the GPUs a rank with environment env can use on
// this host, for GPU binding (nil: none). It returns the agent's exit
// status.
//
// gpuBus lists the PCI bus ids of those GPUs in CUDA ordinal order (nil:
// unknown), for placing ranks near them when the launcher asks.
func AgentMain(stdin io.Reader, stdout, stderr io.Writer, gpuCount func(env []string) int, gpuBus func(env []string) []string) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	var job agentJob
	if err == nil {
		err = json.Unmarshal(line, &job)
	}
	if err == nil && !safeJobID(job.JobID) {
		err = fmt.Errorf("bad job id %q", job.JobID)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gompirun host agent: reading the job: %v\n", err)
		return 2
	}
	// Writing to a launcher that is gone must fail, not kill the agent
	// before it has cleaned up. (Notify, not Ignore: an ignored SIGPIPE
	// would be inherited by the ranks.)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(stops)

	a := &agent{job: job, out: &frameWriter{w: stdout}}
	a.out.w.Write([]byte(agentMagic))
	if job.Dir != "" {
		os.Chdir(job.Dir) // else stay where the launch agent put us, as mpirun does
	}
	if !job.GPUBind {
		gpuCount = nil
	}
	if err := a.place(gpuCount, gpuBus, stderr); err != nil {
		fmt.Fprintf(stderr, "placing the ranks: %v\n", err)
	}
	for _, r := range job.Ranks {
		a.start(r, gpuCount)
	}
	a.control(in, stops)
	a.finish()
	return 0
}

// agent is the host agent's state.
type agent struct {
	job     agentJob
	out     *frameWriter
	procs   []*agentProc
	readers sync.WaitGroup // output copiers
	stdin   *stdinFeed     // rank 0's stdin, when it is here and reads it
	binds   []rankBinding  // by local rank, when the launcher asks (placement_agent.go)
}

// stdinFeed passes the launcher's "stdin" chunks to rank 0 on its own
// goroutine, acknowledging each one; a nil chunk closes rank 0's stdin.
type stdinFeed struct {
	chunks chan []byte
	w      *os.File
}

func (a *agent) feedStdin(f *stdinFeed) {
	broken := false // rank 0 is gone: acknowledge, drop
	for b := range f.chunks {
		switch {
		case b == nil:
			f.w.Close()
			broken = true
			continue
		case !broken:
			_, err := f.w.Write(b)
			broken = err != nil
		}
		a.out.frame(frameStdinAck, 0, nil)
	}
}

// agentProc is one started rank.
type agentProc struct {
	rank int
	pid  int
	done chan struct{} // closed once reaped
}

// start starts one rank and the goroutines relaying its output and exit.
func (a *agent) start(r agentRank, gpuCount func([]string) int) {
	env := append(os.Environ(), r.Env...)
	env = append(env, wireup.EnvJobSecret+"="+a.job.Secret)
	if a.binds != nil {
		env = append(env, a.bindEnv(r)...)
	} else if gpuCount != nil {
		if n := gpuCount(env); n > 0 {
			env = append(env, wireup.EnvGPU+"="+strconv.Itoa(r.LocalRank%n))
		}
	}
	cmd := exec.Command(a.job.Program, a.job.Args...)
	cmd.Env = env
	cmd.SysProcAttr = rankProcAttr()
	if r.Rank == 0 && a.job.Stdin {
		inR, inW, err := os.Pipe()
		if err != nil {
			a.startFailed(r.Rank, err)
			return
		}
		defer inR.Close() // the rank has its own copy
		cmd.Stdin = inR
		a.stdin = &stdinFeed{chunks: make(chan []byte, stdinWindow+1), w: inW}
		go a.feedStdin(a.stdin)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		a.startFailed(r.Rank, err)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		a.startFailed(r.Rank, err)
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = startBound(a.cpusOf(r), cmd.Start)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		a.startFailed(r.Rank, err)
		return
	}
	p := &agentProc{rank: r.Rank, pid: cmd.Process.Pid, done: make(chan struct{})}
	a.procs = append(a.procs, p)
	a.out.frame(framePid, r.Rank, strconv.AppendInt(nil, int64(p.pid), 10))
	a.readers.Add(2)
	go a.relay(r.Rank, frameStdout, outR)
	go a.relay(r.Rank, frameStderr, errR)
	go func() {
		st := waitStatus(cmd)
		close(p.done)
		a.out.frame(frameExit, r.Rank, fmt.Appendf(nil, "%d %d", st.Code, int(st.Signal)))
	}()
}

// startFailed reports a rank that could not start, classed as a shell
// would class it.
func (a *agent) startFailed(rank int, err error) {
	class := startOther
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		class = startNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		class = startNoExec
	}
	a.out.frame(frameStartErr, rank, []byte(class+" "+err.Error()))
}

// relay sends r's lines as frames of kind until EOF.
func (a *agent) relay(rank int, kind byte, r *os.File) {
	defer a.readers.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			a.out.frame(kind, rank, b)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// control obeys the launcher's control lines until "end" (the job is over:
// kill what is left at once) or until stdin ends or a stop signal arrives
// (the launcher is gone: terminate the ranks, KILL after the grace period).
func (a *agent) control(in *bufio.Reader, stops <-chan os.Signal) {
	lines := make(chan agentControl)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		for {
			b, err := in.ReadBytes('\n')
			var c agentControl
			if err != nil || json.Unmarshal(b, &c) != nil {
				return
			}
			lines <- c
			if c.Op == "end" {
				return
			}
		}
	}()
	for {
		select {
		case c := <-lines:
			switch c.Op {
			case "signal":
				a.signal(c.Rank, syscall.Signal(c.Signal))
			case "stdin", "stdin-eof":
				a.passStdin(c)
			case "end":
				a.killAll(syscall.SIGKILL)
				return
			}
		case <-eof:
			a.terminate()
			return
		case <-stops:
			a.terminate()
			return
		}
	}
}

// passStdin queues a chunk (or the end) of rank 0's stdin. The launcher
// keeps within stdinWindow, so the queue has room; beyond it (a launcher
// out of step) a chunk is dropped rather than the control loop stalled.
func (a *agent) passStdin(c agentControl) {
	if a.stdin == nil {
		return
	}
	b := c.Data
	if c.Op == "stdin-eof" {
		b = nil
	} else if len(b) == 0 {
		return
	}
	select {
	case a.stdin.chunks <- b:
	default:
	}
}

// signal sends sig to rank's process group, if the rank is this host's.
func (a *agent) signal(rank int, sig syscall.Signal) {
	i := slices.IndexFunc(a.procs, func(p *agentProc) bool { return p.rank == rank })
	if i >= 0 {
		syscall.Kill(-a.procs[i].pid, sig)
	}
}

func (a *agent) killAll(sig syscall.Signal) {
	for _, p := range a.procs {
		syscall.Kill(-p.pid, sig)
	}
}

// terminate ends every rank: SIGTERM (and SIGCONT, for a stopped one), then
// SIGKILL to the groups once the ranks have gone or the grace period ends,
// so that their children go too.
func (a *agent) terminate() {
	a.killAll(syscall.SIGTERM)
	a.killAll(syscall.SIGCONT)
	grace := time.NewTimer(a.job.Grace)
	defer grace.Stop()
	for _, p := range a.procs {
		select {
		case <-p.done:
		case <-grace.C:
		}
	}
	a.killAll(syscall.SIGKILL)
}

// finish waits for the ranks, drains their output (not beyond the grace
// period: only a process that left its group can hold a pipe open), removes
// the job's segments, and says so.
func (a *agent) finish() {
	for _, p := range a.procs {
		<-p.done
	}
	drained := make(chan struct{})
	go func() { a.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(a.job.Grace):
	}
	if a.stdin != nil {
		a.stdin.w.Close() // unblocks a write rank 0 will never read
	}
	removeSegments(filepath.Join(shmDir, wireup.ShmPrefix(a.job.JobID)) + "*")
	a.out.frame(frameDone, 0, nil)
}

// waitStatus reaps cmd and says how it ended.
func waitStatus(cmd *exec.Cmd) ExitStatus {
	cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ExitStatus{Code: cmd.ProcessState.ExitCode()}
	case ws.Signaled():
		return ExitStatus{Signal: ws.Signal()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// safeJobID reports whether id is safe in the segment glob the agent
// removes: 1 to 32 letters or digits, as the launcher makes them.
func safeJobID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
