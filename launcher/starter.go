package launcher

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"

	"github.com/gompix/gompix/internal/wireup"
)

// wireupSecretVar is the job secret's variable, which is never forwarded
// on a command line.
const wireupSecretVar = wireup.EnvJobSecret

// ProcSpec is what a Starter needs to start one rank.
type ProcSpec struct {
	Rank    int
	Host    string
	Program string
	Args    []string
	// Env is the rank's complete environment for a start on this host: the
	// launcher's environment, then Forward.
	Env []string
	// Forward is the part of Env the launcher decided (-x variables and the
	// job contract) less the job secret: what a start elsewhere sets over
	// that host's own environment.
	Forward []string
	// Secret is the job secret (in Env as GOMPIX_JOB_SECRET, not in
	// Forward). A start elsewhere must hand it over apart from any command
	// line, where every user of either host could read it (ps), and show it
	// in no message.
	Secret string
	// Stdin, Stdout and Stderr are the rank's standard streams. Run passes
	// *os.File values (pipe ends or the launcher's stdin), so no copying
	// goroutine sits between a local rank and the launcher.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Starter starts one rank's process on this host (LocalStarter). Ranks on
// other hosts are started by a host agent per host instead (AgentMain).
type Starter interface {
	Start(spec ProcSpec) (Proc, error)
}

// Proc is a started rank.
type Proc interface {
	// Pid identifies the process in messages (the local pid, or the
	// agent's).
	Pid() int
	// Signal sends sig to the rank's whole process group. Signalling a
	// rank that has already ended is not an error.
	Signal(sig syscall.Signal) error
	// Wait waits for the rank to end and returns how it ended; the error is
	// for failures to wait, not for a non-zero status. Called once.
	Wait() (ExitStatus, error)
}

// ExitStatus is how a rank ended.
type ExitStatus struct {
	Code   int            // exit status, when Signal is 0
	Signal syscall.Signal // the signal that killed it, or 0
}

// Failed reports whether the rank ended other than by exit(0).
func (s ExitStatus) Failed() bool { return s.Code != 0 || s.Signal != 0 }

// ShellCode is the status a shell would report: Code, or 128+signal.
func (s ExitStatus) ShellCode() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.Code
}

func (s ExitStatus) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v)", int(s.Signal), s.Signal)
	}
	return fmt.Sprintf("exited with status %d", s.Code)
}

// LocalStarter execs ranks on this host, each the leader of a new process
// group.
type LocalStarter struct{}

// Start implements Starter.
func (LocalStarter) Start(spec ProcSpec) (Proc, error) {
	cmd := exec.Command(spec.Program, spec.Args...)
	cmd.Env = spec.Env
	cmd.Stdin = spec.Stdin
	cmd.Stdout = spec.Stdout
	cmd.Stderr = spec.Stderr
	cmd.SysProcAttr = rankProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &localProc{cmd: cmd}, nil
}

type localProc struct{ cmd *exec.Cmd }

func (p *localProc) Pid() int { return p.cmd.Process.Pid }

// Signal signals the group whose id is the rank's pid. After the rank has
// been reaped the group may live on in its children, and the kernel does not
// hand out a pid that is still some group's id, so the call reaches exactly
// the rank's descendants; once the group is empty it fails with ESRCH,
// which is not an error here.
func (p *localProc) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

func (p *localProc) Wait() (ExitStatus, error) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return ExitStatus{}, err
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return ExitStatus{Code: p.cmd.ProcessState.ExitCode()}, nil
	}
	if ws.Signaled() {
		return ExitStatus{Signal: ws.Signal()}, nil
	}
	return ExitStatus{Code: ws.ExitStatus()}, nil
}

// shellQuote quotes s for a POSIX shell: unchanged when it is made of safe
// characters only, otherwise in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
