//go:build !linux

package cpubind

// Allowed fails: thread affinity is set on Linux only.
func Allowed() ([]int, error) { return nil, ErrUnsupported }

// BindThread fails: thread affinity is set on Linux only.
func BindThread(cpu int) error { return ErrUnsupported }

// SetAllowed fails: thread affinity is set on Linux only.
func SetAllowed(cpus []int) error { return ErrUnsupported }

// BindProcess fails: thread affinity is set on Linux only.
func BindProcess(cpu int) error { return ErrUnsupported }
