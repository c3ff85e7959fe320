//go:build !linux

package pt2pt

import "runtime"

// osYield falls back to yielding the goroutine where sched_yield is not
// reachable through package syscall.
func osYield() { runtime.Gosched() }
