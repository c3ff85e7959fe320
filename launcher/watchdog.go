package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// watchdogScript is run by sh as the job's watchdog. The launcher writes
// each local rank's process group id to its stdin, one a line, and "done"
// when the job has ended normally. If stdin ends without "done", the
// launcher died without cleaning up (SIGKILL, a crash): the watchdog then
// kills every group, so that the ranks' own children (which PDEATHSIG does
// not reach) die too, waits a little for them to go, and removes the job's
// shared-memory segments ($1 is their glob's prefix). It ignores the
// signals a terminal or a batch system sends, so that it outlives the
// launcher long enough.
const watchdogScript = `trap '' HUP INT QUIT TERM USR1 USR2
g=
while IFS= read -r l; do
	case $l in
	done) exit 0 ;;
	*[!0-9]*|'') ;;
	*) g="$g -$l" ;;
	esac
done
[ -n "$g" ] || exit 0
kill -s KILL -- $g 2>/dev/null
i=0
while [ $i -lt 50 ]; do
	alive=
	for p in $g; do kill -s 0 -- "$p" 2>/dev/null && alive=1; done
	[ -n "$alive" ] || break
	sleep 0.1
	i=$((i+1))
done
rm -f -- "$1"*
`

// watchdog is the launcher's end of the watchdog process (nil-safe: a
// watchdog that could not start is a nil *watchdog, and the job runs
// without that protection).
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

// startWatchdog starts the job's watchdog, in its own process group so
// that signals meant for the launcher's group (a terminal's ^C) do not
// reach it. shmGlob is the job's segment glob, ending in "*".
func startWatchdog(shmGlob string) *watchdog {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "gompirun-watchdog", shmGlob[:len(shmGlob)-1])
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil
	}
	return &watchdog{cmd: cmd, w: w}
}

// watch adds process group pgid to those killed if the launcher dies.
func (wd *watchdog) watch(pgid int) {
	if wd != nil {
		fmt.Fprintf(wd.w, "%d\n", pgid)
	}
}

// release tells the watchdog that the job ended normally and reaps it.
func (wd *watchdog) release() {
	if wd == nil {
		return
	}
	wd.w.WriteString("done\n")
	wd.w.Close()
	wd.cmd.Wait()
}
