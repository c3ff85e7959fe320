//go:build !linux

package pt2pt

import "runtime"

// YieldProcessor falls back to yielding the goroutine where sched_yield is
// not reachable through package syscall.
func YieldProcessor() { runtime.Gosched() }
