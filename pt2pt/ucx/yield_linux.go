package ucx

import "syscall"

// osYield gives the processor to another runnable thread (sched_yield),
// without the Go runtime's system-call bookkeeping: the call cannot block.
// A variable so that a test can count the calls.
var osYield = func() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
