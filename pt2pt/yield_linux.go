package pt2pt

import "syscall"

// YieldProcessor gives the processor to another runnable thread of any
// process (sched_yield); runtime.Gosched would only switch goroutines. The
// engine's wait policy uses it when ranks outnumber cores, and so does a
// transport's immediate receive then (pt2pt/ucx).
func YieldProcessor() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
