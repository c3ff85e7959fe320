package launcher

import "syscall"

// rankProcAttr puts the rank in its own process group, so the launcher can
// signal it with all its children, and asks the kernel to SIGKILL it if the
// launcher dies. (Pdeathsig fires when the thread that forked exits; the Go
// runtime does not retire threads that did not lock themselves, so in
// practice it fires when the launcher process dies.)
func rankProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
