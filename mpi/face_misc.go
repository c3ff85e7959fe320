package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Wtime is the time in seconds since an origin fixed for the process
// (MPI_Wtime), from the monotonic clock: differences are elapsed time, and
// the values of different ranks are not comparable (MPI_WTIME_IS_GLOBAL is
// false).
func Wtime() float64 { return core.Wtime() }

// Wtick is Wtime's resolution in seconds (MPI_Wtick): a nanosecond, the
// monotonic clock's unit.
func Wtick() float64 { return core.Wtick() }

// ThreadLevel is a thread support level (MPI_THREAD_*).
type ThreadLevel int

// The thread support levels, in MPI's order.
const (
	ThreadSingle     = ThreadLevel(core.ThreadSingle)
	ThreadFunneled   = ThreadLevel(core.ThreadFunneled)
	ThreadSerialized = ThreadLevel(core.ThreadSerialized)
	ThreadMultiple   = ThreadLevel(core.ThreadMultiple)
)

func (l ThreadLevel) String() string { return core.ThreadLevel(l).String() }

// QueryThread is the thread support gompix provides (MPI_Query_thread):
// always ThreadMultiple, any goroutine may call any operation at any time.
func QueryThread() ThreadLevel { return ThreadLevel(core.QueryThread()) }

// Version is the version of the MPI standard gompix follows
// (MPI_Get_version): 4.1.
func Version() (major, minor int) { return core.Version() }

// LibraryVersion describes the library (MPI_Get_library_version): gompix,
// the module version and commit the binary was built from, and the Go
// version.
func LibraryVersion() string { return core.LibraryVersion() }

// GetProcessorName names the machine the process runs on
// (MPI_Get_processor_name): its host name.
func GetProcessorName() (string, error) {
	h, err := core.GetProcessorName()
	return h, face(err)
}

// ReduceLocal combines in into inout element by element, inout[i] =
// in[i] ∘ inout[i], on this process alone (MPI_Reduce_local). Both
// buffers hold the same type and count (else ErrType, ErrCount); a user
// op's order is MPI's (in is the left operand). Device buffers are combined
// in host memory, copied there and back. Avg, which divides by the number
// of contributions a collective has, has no meaning here (ErrOp).
func ReduceLocal(in, inout Buffer, op Op) error {
	return face(core.ReduceLocal(cb(in), cb(inout), op.in))
}

// Alltoallw sends send[j] to rank j and receives from rank i into recv[i]
// (MPI_Alltoallw): each peer's buffer has its own type, length and memory
// (host or device), which the per-peer buffers carry in place of MPI's
// types and byte displacements. Each list has one buffer per rank (else
// ErrCount). A message larger than its receive buffer is an ErrTruncate; a
// shorter one is received as it is. Like every collective, all ranks call
// it, and collectives on one communicator are ordered.
func (c *Comm) Alltoallw(send, recv []Buffer) error {
	return c.fail(coreComm(c).Alltoallw(cbs(send), cbs(recv)))
}

// cbs is bs as core sees them (a nil list stays nil).
func cbs(bs []Buffer) []core.Buffer {
	if bs == nil {
		return nil
	}
	out := make([]core.Buffer, len(bs))
	for i, b := range bs {
		out[i] = cb(b)
	}
	return out
}
