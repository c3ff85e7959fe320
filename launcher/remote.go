package launcher

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hostAgent is the launcher's side of one remote host's agent: the ranks
// placed there, and once started, the launch-agent process whose stdin
// carries the job and control lines and whose stdout brings frames back.
type hostAgent struct {
	host  string
	sink  *outputSink
	job   agentJob
	procs map[int]*remoteProc

	cmd    *exec.Cmd
	acks   chan struct{} // frameStdinAck, for forwardStdin
	mu     sync.Mutex    // guards queue and closed
	queue  chan any      // lines for the agent's stdin, written by writer
	closed bool          // queue is closed
	wdone  chan struct{} // closed when writer has ended
	done   chan struct{}
	status string // how the agent process ended, set before done closes
}

// remoteProc is a rank run by a host agent: its Signal becomes a control
// line, and its Wait the agent's report of its end.
type remoteProc struct {
	a    *hostAgent
	rank int
	mu   sync.Mutex
	pid  int
	st   ExitStatus
	err  error
	done chan struct{}
}

func (p *remoteProc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *remoteProc) Signal(sig syscall.Signal) error {
	p.a.send(agentControl{Op: "signal", Rank: p.rank, Signal: int(sig)})
	return nil
}

func (p *remoteProc) Wait() (ExitStatus, error) {
	<-p.done
	return p.st, p.err
}

// end records how the rank ended, once.
func (p *remoteProc) end(st ExitStatus, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	p.st, p.err = st, err
	close(p.done)
}

// forwardStdin sends r (rank 0's input) to the agent in chunks, at most
// stdinWindow ahead of its acknowledgements, then its end. It stops when
// r ends or fails (the launcher closes its own pipe when the job ends),
// when rank 0 has ended, or when the agent is gone; closeR is called on
// the way out.
func (a *hostAgent) forwardStdin(r io.Reader, closeR func()) {
	defer closeR()
	rank0 := a.procs[0].done
	buf := make([]byte, stdinChunk)
	credits := stdinWindow
	for {
		for credits == 0 {
			select {
			case <-a.acks:
				credits++
			case <-rank0:
				return
			case <-a.done:
				return
			}
		}
		select {
		case <-rank0:
			return
		default:
		}
		n, err := r.Read(buf)
		if n > 0 {
			a.send(agentControl{Op: "stdin", Data: bytes.Clone(buf[:n])}) // queued: not buf, which the next Read fills
			credits--
		}
		if err != nil {
			a.send(agentControl{Op: "stdin-eof"})
			return
		}
	}
}

// add registers a rank on this host; the agent starts it in launch.
func (a *hostAgent) add(rank, localRank int, env []string) *remoteProc {
	a.job.Ranks = append(a.job.Ranks, agentRank{Rank: rank, LocalRank: localRank, Env: env})
	p := &remoteProc{a: a, rank: rank, done: make(chan struct{})}
	a.procs[rank] = p
	return p
}

// agentArgv is the command that runs the host agent on host: the launch
// agent's words, the host and the remote command as one shell line (as ssh
// takes it), or, when a word holds "%h", that word with the host in it and
// the remote command as separate words (an agent that execs it without a
// shell, such as srun).
func agentArgv(launchAgent, host, agentPath string) []string {
	words := strings.Fields(launchAgent)
	if len(words) == 0 {
		words = []string{DefaultLaunchAgent}
	}
	if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(w, "%h") }) {
		for i, w := range words {
			words[i] = strings.ReplaceAll(w, "%h", host)
		}
		return append(words, agentPath, HostAgentArg)
	}
	return append(words, host, "exec "+shellQuote(agentPath)+" "+HostAgentArg)
}

// launch starts the agent process and hands it the job. A failure to start
// ends every rank of the host with the error.
func (a *hostAgent) launch(argv []string) {
	a.done = make(chan struct{})
	if err := a.startProcess(argv); err != nil {
		a.failAll(fmt.Errorf("host %s: cannot run launch agent %q: %w", a.host, argv[0], err))
		a.status = "not started"
		close(a.done)
		return
	}
	a.send(a.job)
}

func (a *hostAgent) startProcess(argv []string) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer inR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		inW.Close()
		return err
	}
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		inW.Close()
		outR.Close()
		return err
	}
	defer errW.Close()
	a.cmd = exec.Command(argv[0], argv[1:]...)
	a.cmd.Stdin, a.cmd.Stdout, a.cmd.Stderr = inR, outW, errW
	// Its own session, so its own group: a terminal's ^C is the
	// launcher's to forward, and the agent must outlive the launcher to
	// clean up after it. Without a terminal, an ssh that would ask for a
	// password fails (naming the host) instead of stopping, unseen, on
	// SIGTTIN.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := a.cmd.Start(); err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return err
	}
	a.queue, a.wdone = make(chan any, agentQueue), make(chan struct{})
	go a.writer(inW)
	go a.read(outR, errR)
	return nil
}

// agentQueue is how many lines may wait for an agent that is slow to read
// (connecting, or hung); stdin chunks are bounded apart (stdinWindow).
const agentQueue = 256

// writer writes the queued lines to the agent's stdin, each within its
// deadline, and closes it when the queue closes. Writing on its own
// goroutine keeps the launcher's loop from waiting for a launch agent that
// is still connecting (the job can exceed a pipe) or for a hung host.
func (a *hostAgent) writer(in *os.File) {
	defer close(a.wdone)
	defer in.Close()
	failed := false
	for v := range a.queue {
		if failed {
			continue // the agent is gone; its reader reports that
		}
		timeout := sendTimeout
		if _, isJob := v.(agentJob); isJob {
			timeout = jobSendTimeout
		}
		in.SetWriteDeadline(time.Now().Add(timeout))
		failed = writeJSONLine(in, v) != nil
	}
}

// sendTimeout bounds a write to an agent that does not read its stdin (a
// hung host), so the launcher's loop is never stuck behind it;
// jobSendTimeout bounds the job's delivery, which waits for the launch
// agent to connect.
const (
	sendTimeout    = 5 * time.Second
	jobSendTimeout = 2 * time.Minute
)

// send queues one JSON line for the agent without waiting. Failures (an
// agent that is gone) show up as its end, so they are not reported here; a
// line that finds the queue full (an agent not reading) is dropped.
func (a *hostAgent) send(v any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.queue != nil && !a.closed {
		select {
		case a.queue <- v:
		default:
		}
	}
}

// kill kills the agent process here (with ssh, the remote agent then sees
// its stdin end and cleans up); its reader then fails the ranks left.
func (a *hostAgent) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// closeInput closes the agent's stdin once the queued lines are written:
// after "end", or to make it clean up.
func (a *hostAgent) closeInput() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.queue != nil && !a.closed {
		a.closed = true
		close(a.queue)
	}
}

// read follows the agent's stdout and stderr until both end, then reaps
// it and fails the ranks it did not report on.
func (a *hostAgent) read(out, errOut *os.File) {
	defer close(a.done)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer errOut.Close()
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			a.sink.message(a.host + ": " + sc.Text())
		}
	}()
	ferr := a.frames(out)
	out.Close()
	wg.Wait()
	a.cmd.Wait()
	a.status = a.cmd.ProcessState.String()
	if ferr == nil {
		ferr = fmt.Errorf("launch agent %s", a.status)
	}
	a.failAll(fmt.Errorf("host %s: %w before the rank ended", a.host, ferr))
}

// frames reads the agent's stdout: lines before agentMagic (a remote
// shell's chatter) are shown as messages, then frames are dispatched. It
// returns nil at the agent's frameDone or EOF, or the stream's error.
func (a *hostAgent) frames(r io.Reader) error {
	br := bufio.NewReaderSize(r, maxFrame)
	for {
		line, err := br.ReadBytes('\n')
		if string(line) == agentMagic {
			break
		}
		if len(line) > 0 {
			a.sink.message(a.host + ": " + string(bytes.TrimSuffix(line, []byte("\n"))))
		}
		if err != nil {
			return nil
		}
	}
	for {
		kind, rank, payload, err := readFrame(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading host agent: %w", err)
		}
		p := a.procs[rank]
		if p == nil && kind != frameDone {
			return fmt.Errorf("host agent sent a frame for rank %d, not one of its ranks", rank)
		}
		switch kind {
		case frameStdout, frameStderr:
			a.sink.line(rank, kind == frameStderr, payload)
		case framePid:
			pid, _ := strconv.Atoi(string(payload))
			p.mu.Lock()
			p.pid = pid
			p.mu.Unlock()
		case frameExit:
			var st ExitStatus
			var sig int
			fmt.Sscan(string(payload), &st.Code, &sig)
			st.Signal = syscall.Signal(sig)
			p.end(st, nil)
		case frameStartErr:
			p.end(ExitStatus{}, remoteStartError(a.host, string(payload)))
		case frameStdinAck:
			select {
			case a.acks <- struct{}{}:
			default:
			}
		case frameDone:
			return nil
		default:
			return fmt.Errorf("host agent sent an unknown frame %q", kind)
		}
	}
}

// remoteStartError turns a frameStartErr payload into an error of the
// class a local start would give (exec.ErrNotFound, fs.ErrPermission), so
// that the job's status is the same 127 or 126.
func remoteStartError(host, payload string) error {
	class, msg, _ := strings.Cut(payload, " ")
	e := &startError{msg: fmt.Sprintf("cannot start on host %s: %s", host, msg)}
	switch class {
	case startNotFound:
		e.class = exec.ErrNotFound
	case startNoExec:
		e.class = fs.ErrPermission
	}
	return e
}

// startError is a remote start failure: its message, and the class it
// unwraps to (nil for others).
type startError struct {
	msg   string
	class error
}

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return e.class }

// failAll ends every rank not yet reported with err.
func (a *hostAgent) failAll(err error) {
	for _, p := range a.procs {
		p.end(ExitStatus{}, err)
	}
}

// finish ends the agent after the job: "end" (kill what is left, clean
// up), then EOF; an agent that has not left within wait is killed here.
func (a *hostAgent) finish(wait time.Duration) {
	a.send(agentControl{Op: "end"})
	a.closeInput()
	select {
	case <-a.done:
	case <-time.After(wait):
		a.kill()
	}
	a.wait()
}

// wait waits for the agent's goroutines: its reader, then its writer,
// whose writes fail at once when the agent is gone.
func (a *hostAgent) wait() {
	<-a.done
	if a.wdone != nil {
		<-a.wdone
	}
}

// dropAgents kills the agents that still have ranks running.
func (j *job) dropAgents() {
	for r, p := range j.procs {
		if rp, ok := p.(*remoteProc); ok && !j.exited[r] {
			rp.a.kill()
		}
	}
}

// addRemote registers rank with its host's agent (made on first use);
// launchAgents starts the agents once every rank is placed.
func (j *job) addRemote(l *launch, rank int, pl placement) {
	i := slices.IndexFunc(j.agents, func(a *hostAgent) bool { return a.host == pl.host })
	if i < 0 {
		i = len(j.agents)
		j.agents = append(j.agents, &hostAgent{
			host: pl.host, sink: j.sink, procs: make(map[int]*remoteProc), acks: make(chan struct{}, stdinWindow),
			job: agentJob{
				JobID: l.jobID, Secret: l.secret, Program: j.cfg.Program, Args: j.cfg.Args,
				Grace: j.cfg.Grace, GPUBind: j.cfg.GPUBind == GPUBindLocal,
				Place: j.cfg.agentPlace(pl),
			},
		})
		if wd, err := os.Getwd(); err == nil {
			j.agents[i].job.Dir = wd
		}
	}
	// The secret is in the job description once, not in each rank's list.
	env := slices.DeleteFunc(j.rankEnv(l, rank, pl), func(kv string) bool {
		return strings.HasPrefix(kv, wireupSecretVar+"=")
	})
	if rank == 0 && l.stdin != nil {
		j.agents[i].job.Stdin = true
	}
	p := j.agents[i].add(rank, pl.localRank, env)
	j.procs = append(j.procs, p)
	go func() {
		st, err := p.Wait()
		l.exits <- exitEvent{rank, st, err}
	}()
}

// launchAgents starts every host's agent (and the copying of the
// launcher's stdin to a remote rank 0), or, when starting the local ranks
// failed (startErr), ends the remote ranks as never started: the job is
// being torn down.
func (j *job) launchAgents(l *launch, startErr error) {
	if startErr != nil {
		for _, a := range j.agents {
			for _, p := range a.procs {
				p.end(ExitStatus{}, nil)
			}
			a.done = make(chan struct{})
			close(a.done)
		}
		return
	}
	path := j.cfg.AgentPath
	if path == "" {
		var err error
		if path, err = os.Executable(); err != nil {
			path = os.Args[0]
		}
	}
	for _, a := range j.agents {
		a.launch(agentArgv(j.cfg.LaunchAgent, a.host, path))
		if a.job.Stdin {
			closeR := func() {}
			if f, ok := l.stdin.(*os.File); ok && f != j.cfg.Stdin {
				closeR = func() { f.Close() } // the launcher's own pipe
			}
			go a.forwardStdin(l.stdin, closeR)
		}
	}
}

// finishAgents ends every agent after the job (see hostAgent.finish), all
// at once.
func (j *job) finishAgents() {
	var wg sync.WaitGroup
	for _, a := range j.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.finish(j.cfg.Grace + 5*time.Second)
		}()
	}
	wg.Wait()
}
