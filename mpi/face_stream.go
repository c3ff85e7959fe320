package mpi

import (
	"time"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Stream is a CUDA stream that communication can be enqueued on (an
// MPIX_Stream of type cudaStream_t). Make one with NewStream or wrap the
// application's own with WrapStream; bind it to a communicator with
// Comm.StreamComm; release it with Free.
//
// Concurrency: methods are safe from any goroutine. Work enqueued from
// several goroutines at once runs in the order the calls were made, as for
// CUDA launches.
type Stream struct{ in core.Stream }

// NewStream creates a CUDA stream on the current device (CurrentDevice),
// non-blocking with respect to the legacy default stream, and binds it to
// gompix's stream engine.
func NewStream() (*Stream, error) {
	r0, r1 := core.NewStream()
	return faceStream(r0), face(r1)
}

// WrapStream binds the application's CUDA stream handle (a CUstream or
// cudaStream_t of the device's primary context, as the CUDA runtime uses)
// on device to gompix's stream engine. The application keeps ownership:
// Free unbinds it and leaves it alive. The stream must be a non-blocking
// one (cudaStreamNonBlocking): a stream that synchronises with the legacy
// default stream would make gompix's own synchronous copies wait for the
// very operations they serve. Handle 0 (the legacy default stream itself)
// is refused for that reason.
func WrapStream(device int, handle uintptr) (*Stream, error) {
	r0, r1 := core.WrapStream(device, handle)
	return faceStream(r0), face(r1)
}

// Device is the ordinal of the stream's GPU.
func (s *Stream) Device() int {
	return coreStream(s).Device()
}

// Handle is the CUDA stream handle (a CUstream), for launching the
// application's own kernels on it.
func (s *Stream) Handle() uintptr {
	return coreStream(s).Handle()
}

// Signal says how the stream meets its flags: "memops" (stream memory
// operations) or "kernels" (one-thread flag kernels).
func (s *Stream) Signal() string {
	return coreStream(s).Signal()
}

// Pending is the number of enqueued operations not yet complete.
func (s *Stream) Pending() int {
	return coreStream(s).Pending()
}

// Synchronize waits until all work on the stream has completed, and
// returns the first error of an enqueued operation that failed since the
// last Synchronize (an enqueued operation cannot report its error when it
// is enqueued; a failed one still releases the stream, so that the job
// does not hang).
func (s *Stream) Synchronize() error {
	return face(coreStream(s).Synchronize())
}

// Query reports whether all work on the stream has completed, without
// waiting; an enqueued operation's failure is reported as by Synchronize.
func (s *Stream) Query() (bool, error) {
	r0, r1 := coreStream(s).Query()
	return r0, face(r1)
}

// Free unbinds the stream and, if NewStream made it, destroys it. A stream
// with enqueued operations not yet complete is an ErrPending error and
// stays usable: synchronize it first. Freeing twice is an error.
func (s *Stream) Free() error {
	return face(coreStream(s).Free())
}

// Copy enqueues a copy of src into dst (device buffers of the same size
// in bytes, on any devices) on the stream.
func (s *Stream) Copy(dst, src Buffer) error {
	return face(coreStream(s).Copy(cb(dst), cb(src)))
}

// Memset enqueues setting every byte of the device buffer b to value.
func (s *Stream) Memset(b Buffer, value byte) error {
	return face(coreStream(s).Memset(cb(b), value))
}

// ReduceLocal enqueues inout[i] = op(in[i], inout[i]) on the stream: MPI's
// Reduce_local, run by gompix's device reduction kernel in stream order.
// Both buffers are device buffers of the same type and length on the
// stream's device (in may also be a peer-accessible buffer of another
// device's, as the kernel reads it directly — not checked beyond being
// device memory). Predefined operations only, and not Avg (the average
// of two buffers is not what an MPI reduction of them means).
func (s *Stream) ReduceLocal(in, inout Buffer, op Op) error {
	return face(coreStream(s).ReduceLocal(cb(in), cb(inout), op.in))
}

// Event is a CUDA event of one device, for observing where a stream has
// got to: record it after enqueued operations, then Query or Synchronize.
type Event struct{ in core.Event }

// NewEvent creates an event on the stream's device; timing events can be
// given to Elapsed, the others are cheaper to record.
func (s *Stream) NewEvent(timing bool) (*Event, error) {
	r0, r1 := coreStream(s).NewEvent(timing)
	return faceEvent(r0), face(r1)
}

// Record captures the stream's work enqueued so far in e (cuEventRecord).
func (s *Stream) Record(e *Event) error {
	return face(coreStream(s).Record(coreEvent(e)))
}

// WaitEvent makes the stream's later work wait for e's last record (which
// may be on another stream, of this or another device).
func (s *Stream) WaitEvent(e *Event) error {
	return face(coreStream(s).WaitEvent(coreEvent(e)))
}

// Query reports whether the work e captured has completed (true for an
// event never recorded).
func (e *Event) Query() (bool, error) {
	r0, r1 := coreEvent(e).Query()
	return r0, face(r1)
}

// Synchronize waits for the work e captured.
func (e *Event) Synchronize() error {
	return face(coreEvent(e).Synchronize())
}

// Free destroys the event.
func (e *Event) Free() error {
	return face(coreEvent(e).Free())
}

// Elapsed is the GPU time between two completed timing events of one
// device (cuEventElapsedTime; about 0.5 µs resolution).
func Elapsed(start, end *Event) (time.Duration, error) {
	r0, r1 := core.Elapsed(coreEvent(start), coreEvent(end))
	return r0, face(r1)
}
