package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/stream"
)

// MPIX-style streams (docs/design/architecture.md §8, docs/guide/streams.md). A Stream wraps a
// CUDA stream; a StreamComm binds a communicator to one; its Enqueue
// operations are ordered on the stream with the kernels and copies around
// them, and the calling goroutine returns at once. Package stream does the
// work: host-mapped flags the CUDA stream writes and waits on, served by
// one progress goroutine per process that starts each operation from Go
// when the stream reaches it.

// streamEngine is the process's stream engine, started on first use and
// kept for the process's lifetime (its goroutine parks when no stream has
// work). A variable so that tests can install one with a small depth.
var streamEngine = struct {
	mu  sync.Mutex
	e   *stream.Engine
	new func() (*stream.Engine, error)
}{new: func() (*stream.Engine, error) {
	cfg, err := stream.FromEnv()
	if err != nil {
		return nil, err
	}
	return stream.NewEngine(cfg), nil
}}

func theStreamEngine() (*stream.Engine, error) {
	streamEngine.mu.Lock()
	defer streamEngine.mu.Unlock()
	if streamEngine.e == nil {
		e, err := streamEngine.new()
		if err != nil {
			return nil, err
		}
		streamEngine.e = e
	}
	return streamEngine.e, nil
}

// Stream is a CUDA stream that communication can be enqueued on (an
// MPIX_Stream of type cudaStream_t). Make one with NewStream or wrap the
// application's own with WrapStream; bind it to a communicator with
// Comm.StreamComm; release it with Free.
//
// Concurrency: methods are safe from any goroutine. Work enqueued from
// several goroutines at once runs in the order the calls were made, as for
// CUDA launches.
type Stream struct {
	ord   int
	dev   cudadrv.Device
	h     cudadrv.Stream
	owned bool
	eng   *stream.Engine
	q     *stream.Queue

	mu    sync.Mutex
	freed bool
}

func streamErr(op string, class, err error) error {
	return &Error{Op: op, Class: class, Err: err}
}

// NewStream creates a CUDA stream on the current device (CurrentDevice),
// non-blocking with respect to the legacy default stream, and binds it to
// gompix's stream engine.
func NewStream() (*Stream, error) {
	const op = "stream create"
	gpu.mu.Lock()
	ord, dev, err := gpu.currentLocked()
	gpu.mu.Unlock()
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	h, err := dev.StreamCreate()
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	s, err := bindStream(op, ord, dev, h, true)
	if err != nil {
		dev.StreamDestroy(h)
		return nil, err
	}
	return s, nil
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
	const op = "stream wrap"
	if handle == 0 {
		return nil, streamErr(op, ErrOther, fmt.Errorf("the legacy default stream cannot carry enqueued communication; use a non-blocking stream"))
	}
	dev, err := gpuDevice(device)
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	return bindStream(op, device, dev, cudadrv.Stream(handle), false)
}

func bindStream(op string, ord int, dev cudadrv.Device, h cudadrv.Stream, owned bool) (*Stream, error) {
	eng, err := theStreamEngine()
	if err != nil {
		return nil, streamErr(op, ErrOther, err)
	}
	q, err := eng.NewQueue(dev, h)
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	return &Stream{ord: ord, dev: dev, h: h, owned: owned, eng: eng, q: q}, nil
}

// Device is the ordinal of the stream's GPU.
func (s *Stream) Device() int { return s.ord }

// Handle is the CUDA stream handle (a CUstream), for launching the
// application's own kernels on it.
func (s *Stream) Handle() uintptr { return uintptr(s.h) }

// Signal says how the stream meets its flags: "memops" (stream memory
// operations) or "kernels" (one-thread flag kernels).
func (s *Stream) Signal() string { return s.q.Signal().String() }

// Pending is the number of enqueued operations not yet complete.
func (s *Stream) Pending() int { return s.q.Pending() }

// use checks that s is live.
func (s *Stream) use(op string) error {
	if s == nil {
		return streamErr(op, ErrOther, fmt.Errorf("nil stream"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return streamErr(op, ErrOther, fmt.Errorf("stream used after Free"))
	}
	return nil
}

// Synchronize waits until all work on the stream has completed, and
// returns the first error of an enqueued operation that failed since the
// last Synchronize (an enqueued operation cannot report its error when it
// is enqueued; a failed one still releases the stream, so that the job
// does not hang).
func (s *Stream) Synchronize() error {
	const op = "stream synchronize"
	if err := s.use(op); err != nil {
		return err
	}
	if err := s.dev.StreamSynchronize(s.h); err != nil {
		return devError(op, ErrOther, err)
	}
	return s.q.TakeErr()
}

// Query reports whether all work on the stream has completed, without
// waiting; an enqueued operation's failure is reported as by Synchronize.
func (s *Stream) Query() (bool, error) {
	const op = "stream query"
	if err := s.use(op); err != nil {
		return false, err
	}
	ok, err := s.dev.StreamQuery(s.h)
	if err != nil {
		return false, devError(op, ErrOther, err)
	}
	if !ok {
		return false, nil
	}
	return true, s.q.TakeErr()
}

// Free unbinds the stream and, if NewStream made it, destroys it. A stream
// with enqueued operations not yet complete is an ErrPending error and
// stays usable: synchronize it first. Freeing twice is an error.
func (s *Stream) Free() error {
	const op = "stream free"
	if s == nil {
		return streamErr(op, ErrOther, fmt.Errorf("nil stream"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return streamErr(op, ErrOther, fmt.Errorf("stream freed twice"))
	}
	if err := s.q.Close(); err != nil {
		return err
	}
	s.freed = true
	if s.owned {
		if err := s.dev.StreamDestroy(s.h); err != nil {
			return devError(op, ErrOther, err)
		}
	}
	return nil
}

// deviceSpan returns the device address and byte length of b, which must
// be a live device buffer (ord >= 0: on device ord).
func deviceSpan(op string, b Buffer, ord int) (cudadrv.DevicePtr, int, error) {
	if b == nil || isInPlace(b) {
		return 0, 0, streamErr(op, ErrBuffer, fmt.Errorf("nil buffer"))
	}
	m := b.mem()
	if m.Kind != pt2pt.Device {
		return 0, 0, streamErr(op, ErrBuffer, fmt.Errorf("a host buffer; stream-ordered copies and kernels need device buffers"))
	}
	if m.Len > 0 && m.Ptr == nil {
		return 0, 0, streamErr(op, ErrBuffer, fmt.Errorf("device buffer used after Free"))
	}
	if ord >= 0 && m.Device != ord {
		return 0, 0, streamErr(op, ErrBuffer, fmt.Errorf("device buffer on device %d, stream on device %d", m.Device, ord))
	}
	return cudadrv.DevicePtr(uintptr(m.Ptr)), m.Len, nil
}

// Copy enqueues a copy of src into dst (device buffers of the same size
// in bytes, on any devices) on the stream.
func (s *Stream) Copy(dst, src Buffer) error {
	const op = "stream copy"
	if err := s.use(op); err != nil {
		return err
	}
	d, dn, err := deviceSpan(op, dst, -1)
	if err != nil {
		return err
	}
	p, sn, err := deviceSpan(op, src, -1)
	if err != nil {
		return err
	}
	if dn != sn {
		return streamErr(op, ErrCount, fmt.Errorf("%d bytes into %d", sn, dn))
	}
	if dn == 0 {
		return nil
	}
	if err := s.dev.MemcpyDtoDAsync(d, p, dn, s.h); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Memset enqueues setting every byte of the device buffer b to value.
func (s *Stream) Memset(b Buffer, value byte) error {
	const op = "stream memset"
	if err := s.use(op); err != nil {
		return err
	}
	d, n, err := deviceSpan(op, b, -1)
	if err != nil || n == 0 {
		return err
	}
	if err := s.dev.MemsetD8Async(d, value, n, s.h); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// ReduceLocal enqueues inout[i] = op(in[i], inout[i]) on the stream: MPI's
// Reduce_local, run by gompix's device reduction kernel in stream order.
// Both buffers are device buffers of the same type and length on the
// stream's device (in may also be a peer-accessible buffer of another
// device's, as the kernel reads it directly — not checked beyond being
// device memory). Predefined operations only, and not Avg (the average
// of two buffers is not what an MPI reduction of them means).
func (s *Stream) ReduceLocal(in, inout Buffer, op Op) error {
	const name = "stream reduce local"
	if err := s.use(name); err != nil {
		return err
	}
	if err := op.check(name); err != nil {
		return err
	}
	ip, _, err := deviceSpan(name, in, -1)
	if err != nil {
		return err
	}
	op2, _, err := deviceSpan(name, inout, s.ord)
	if err != nil {
		return err
	}
	if in.Type() != inout.Type() {
		return streamErr(name, ErrType, fmt.Errorf("%v into %v", in.Type(), inout.Type()))
	}
	if in.Len() != inout.Len() {
		return streamErr(name, ErrCount, fmt.Errorf("%d elements into %d", in.Len(), inout.Len()))
	}
	if op.c.User != nil || op.c.Builtin == dtype.Avg {
		return streamErr(name, ErrOp, fmt.Errorf("only predefined operations other than avg run as device kernels"))
	}
	if !op.c.Builtin.Supports(in.Type().t) {
		return streamErr(name, ErrOp, fmt.Errorf("%v on %v", op.c.Builtin, in.Type()))
	}
	if err := s.eng.LaunchReduce(s.dev, s.h, op.c.Builtin, in.Type().t, ip, op2, in.Len()); err != nil {
		return devError(name, ErrOther, err)
	}
	return nil
}

// Event is a CUDA event of one device, for observing where a stream has
// got to: record it after enqueued operations, then Query or Synchronize.
type Event struct {
	ord    int
	dev    cudadrv.Device
	e      cudadrv.Event
	timing bool

	mu    sync.Mutex
	freed bool
}

// NewEvent creates an event on the stream's device; timing events can be
// given to Elapsed, the others are cheaper to record.
func (s *Stream) NewEvent(timing bool) (*Event, error) {
	const op = "event create"
	if err := s.use(op); err != nil {
		return nil, err
	}
	e, err := s.dev.EventCreate(timing)
	if err != nil {
		return nil, devError(op, ErrOther, err)
	}
	return &Event{ord: s.ord, dev: s.dev, e: e, timing: timing}, nil
}

func (e *Event) use(op string) error {
	if e == nil {
		return streamErr(op, ErrOther, fmt.Errorf("nil event"))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed {
		return streamErr(op, ErrOther, fmt.Errorf("event used after Free"))
	}
	return nil
}

// Record captures the stream's work enqueued so far in e (cuEventRecord).
func (s *Stream) Record(e *Event) error {
	const op = "event record"
	if err := s.use(op); err != nil {
		return err
	}
	if err := e.use(op); err != nil {
		return err
	}
	if e.ord != s.ord {
		return streamErr(op, ErrOther, fmt.Errorf("event of device %d, stream of device %d", e.ord, s.ord))
	}
	if err := s.dev.EventRecord(e.e, s.h); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// WaitEvent makes the stream's later work wait for e's last record (which
// may be on another stream, of this or another device).
func (s *Stream) WaitEvent(e *Event) error {
	const op = "stream wait event"
	if err := s.use(op); err != nil {
		return err
	}
	if err := e.use(op); err != nil {
		return err
	}
	if err := s.dev.StreamWaitEvent(s.h, e.e); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Query reports whether the work e captured has completed (true for an
// event never recorded).
func (e *Event) Query() (bool, error) {
	const op = "event query"
	if err := e.use(op); err != nil {
		return false, err
	}
	ok, err := e.dev.EventQuery(e.e)
	if err != nil {
		return false, devError(op, ErrOther, err)
	}
	return ok, nil
}

// Synchronize waits for the work e captured.
func (e *Event) Synchronize() error {
	const op = "event synchronize"
	if err := e.use(op); err != nil {
		return err
	}
	if err := e.dev.EventSynchronize(e.e); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Free destroys the event.
func (e *Event) Free() error {
	const op = "event free"
	if err := e.use(op); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.freed = true
	if err := e.dev.EventDestroy(e.e); err != nil {
		return devError(op, ErrOther, err)
	}
	return nil
}

// Elapsed is the GPU time between two completed timing events of one
// device (cuEventElapsedTime; about 0.5 µs resolution).
func Elapsed(start, end *Event) (time.Duration, error) {
	const op = "event elapsed"
	if err := start.use(op); err != nil {
		return 0, err
	}
	if err := end.use(op); err != nil {
		return 0, err
	}
	if start.ord != end.ord || !start.timing || !end.timing {
		return 0, streamErr(op, ErrOther, fmt.Errorf("events must be timing events of one device"))
	}
	d, err := start.dev.EventElapsed(start.e, end.e)
	if err != nil {
		return 0, devError(op, ErrOther, err)
	}
	return d, nil
}
