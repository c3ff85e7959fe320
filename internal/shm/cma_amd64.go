//go:build linux

package shm

// process_vm_readv's and process_vm_writev's numbers on linux/amd64 (the
// syscall package does not name them there).
const (
	sysProcessVMReadv  = 310
	sysProcessVMWritev = 311
)
