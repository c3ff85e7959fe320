package core

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
)

// wtimeOrigin is Wtime's zero: the process's start (about).
var wtimeOrigin = time.Now()

// Wtime is the time in seconds since an origin fixed for the process
// (MPI_Wtime), from the monotonic clock: differences are elapsed time, and
// the values of different ranks are not comparable (MPI_WTIME_IS_GLOBAL is
// false).
func Wtime() float64 { return time.Since(wtimeOrigin).Seconds() }

// Wtick is Wtime's resolution in seconds (MPI_Wtick): a nanosecond, the
// monotonic clock's unit.
func Wtick() float64 { return 1e-9 }

// ThreadLevel is a thread support level (MPI_THREAD_*).
type ThreadLevel int

// The thread support levels, in MPI's order.
const (
	ThreadSingle ThreadLevel = iota
	ThreadFunneled
	ThreadSerialized
	ThreadMultiple
)

func (l ThreadLevel) String() string {
	switch l {
	case ThreadSingle:
		return "MPI_THREAD_SINGLE"
	case ThreadFunneled:
		return "MPI_THREAD_FUNNELED"
	case ThreadSerialized:
		return "MPI_THREAD_SERIALIZED"
	case ThreadMultiple:
		return "MPI_THREAD_MULTIPLE"
	}
	return fmt.Sprintf("ThreadLevel(%d)", int(l))
}

// QueryThread is the thread support gompix provides (MPI_Query_thread):
// always ThreadMultiple, any goroutine may call any operation at any time.
func QueryThread() ThreadLevel { return ThreadMultiple }

// Version is the version of the MPI standard gompix follows
// (MPI_Get_version): 4.1.
func Version() (major, minor int) { return 4, 1 }

// LibraryVersion describes the library (MPI_Get_library_version): gompix,
// the module version and commit the binary was built from, and the Go
// version.
func LibraryVersion() string { return "gompix " + buildinfo.Version() }

// GetProcessorName names the machine the process runs on
// (MPI_Get_processor_name): its host name.
func GetProcessorName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", &Error{Op: "get_processor_name", Class: ErrOther, Err: err}
	}
	return h, nil
}

// ReduceLocal combines in into inout element by element, inout[i] =
// in[i] ∘ inout[i], on this process alone (MPI_Reduce_local). Both
// buffers hold the same type and count (else ErrType, ErrCount); a user
// op's order is MPI's (in is the left operand). Device buffers are combined
// in host memory, copied there and back. Avg, which divides by the number
// of contributions a collective has, has no meaning here (ErrOp).
func ReduceLocal(in, inout Buffer, op Op) error {
	const name = "reduce_local"
	if err := op.check(name); err != nil {
		return err
	}
	if err := checkBuf(name, in); err != nil {
		return err
	}
	if err := checkBuf(name, inout); err != nil {
		return err
	}
	t := in.Type()
	switch {
	case t != inout.Type():
		return &Error{Op: name, Class: ErrType, Err: fmt.Errorf("%v into %v", t, inout.Type())}
	case in.Len() != inout.Len():
		return &Error{Op: name, Class: ErrCount, Err: fmt.Errorf("%d elements into %d", in.Len(), inout.Len())}
	case op.c.User == nil && op.c.Builtin == dtype.Avg:
		return &Error{Op: name, Class: ErrOp, Err: errors.New("Avg is a collective's mean; a local reduction of two operands has none")}
	}
	a, b := in.hostBytes(), inout.hostBytes()
	staged := in.mem().Kind != pt2pt.Host || inout.mem().Kind != pt2pt.Host
	if staged {
		a, b = make([]byte, bufBytes(in)), make([]byte, bufBytes(inout))
		if err := copyOut(name, in, a); err != nil {
			return err
		}
		if err := copyOut(name, inout, b); err != nil {
			return err
		}
	}
	if err := reduceBytes(op, t.t, a, b); err != nil {
		return &Error{Op: name, Class: reduceClass(err), Err: err}
	}
	if staged {
		return copyIn(name, inout, b)
	}
	return nil
}

// reduceBytes is inout = in ∘ inout by op on elements of type t.
func reduceBytes(op Op, t dtype.Type, in, inout []byte) error {
	if op.c.User != nil {
		if op.c.Typed && op.c.Elem != t {
			return fmt.Errorf("user op for %v used on %v: %w", op.c.Elem, t, ErrOp)
		}
		return op.c.User(in, inout, t)
	}
	return dtype.Reduce(op.c.Builtin, t, inout, in)
}

// reduceClass is the class of a reduction's error.
func reduceClass(err error) error {
	for _, c := range []error{ErrOp, ErrType, ErrCount} {
		if errors.Is(err, c) {
			return c
		}
	}
	return ErrOther
}
