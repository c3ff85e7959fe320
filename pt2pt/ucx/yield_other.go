//go:build !linux

package ucx

import "runtime"

// osYield gives the processor away; elsewhere than Linux, to the Go
// scheduler only.
// A variable so that a test can count the calls.
var osYield = runtime.Gosched
