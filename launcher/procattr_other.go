//go:build unix && !linux

package launcher

import "syscall"

// rankProcAttr puts the rank in its own process group, so the launcher can
// signal it with all its children.
func rankProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
