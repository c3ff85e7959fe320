package pt2pt

import "syscall"

// osYield gives the processor to another runnable thread of any process
// (sched_yield); runtime.Gosched would only switch goroutines.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
