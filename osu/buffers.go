package osu

import (
	"fmt"
	"runtime"

	"github.com/gompix/gompix/mpi"
)

// benchBuffer is a benchmark's message buffer of capacity elements, in
// host or (one day) device memory. The timed loops only hand View(n) to
// mpi; Fill and Check run outside the timed region, so a device
// implementation may copy through the host there.
type benchBuffer interface {
	// View is the mpi.Buffer of the first n elements.
	View(n int) mpi.Buffer
	// Fill sets element i (i < n) to value(i), converted to the element
	// type (integers wrap as Go conversions do).
	Fill(n int, value func(i int) int64)
	// Check counts the elements i < n that differ from value(i).
	Check(n int, value func(i int) int64) int
}

// number is the element set of the OSU datatypes (-T).
type number interface{ int8 | int32 | float32 }

// viewCache keeps a buffer's last View: the timed loops ask for the same
// view every iteration, and building it allocates (an mpi.Buffer is a
// pointer), which would make the benchmark, not the library, start the
// garbage collector inside the timed region.
type viewCache struct {
	n int
	v mpi.Buffer
}

func (c *viewCache) get(n int, build func() mpi.Buffer) mpi.Buffer {
	if c.v == nil || c.n != n {
		c.n, c.v = n, build()
	}
	return c.v
}

// hostBuffer is a benchBuffer over a Go slice.
type hostBuffer[T number] struct {
	s    []T
	view viewCache
}

func (b *hostBuffer[T]) View(n int) mpi.Buffer {
	return b.view.get(n, func() mpi.Buffer { return mpi.Slice(b.s[:n]) })
}

func (b *hostBuffer[T]) Fill(n int, value func(int) int64) {
	for i := range b.s[:n] {
		b.s[i] = convert[T](value(i))
	}
}

func (b *hostBuffer[T]) Check(n int, value func(int) int64) int {
	bad := 0
	for i, v := range b.s[:n] {
		if v != convert[T](value(i)) {
			bad++
		}
	}
	return bad
}

// convert turns a pattern value into T: integer types wrap (two's
// complement, as the reduction kernels do), floats are exact for the small
// integers the patterns use.
func convert[T number](v int64) T {
	var z T
	switch any(z).(type) {
	case int8:
		return any(int8(v)).(T)
	case int32:
		return any(int32(v)).(T)
	default:
		return T(float32(v))
	}
}

func newHostBuffer[T number](n int) benchBuffer { return &hostBuffer[T]{s: make([]T, n)} }

// deviceAllocator allocates a device buffer of n elements of d. It is the
// one place device memory will come from: when the mpi package gains
// device buffers, set it (e.g. from a file with a build tag or an init in
// a device-aware file) to an implementation whose View returns the mpi
// device buffer and whose Fill/Check copy through host memory. Nil means
// no device support, and runs asking for device buffers fail with
// ErrDeviceUnsupported before they print anything.
var deviceAllocator func(d Datatype, n int) (benchBuffer, error) = allocDevice

// allocDevice is the deviceAllocator over mpi.AllocDevice (the current
// device: the launcher's binding).
func allocDevice(d Datatype, n int) (benchBuffer, error) {
	switch d {
	case Int:
		return newDeviceBuffer[int32](n)
	case Float:
		return newDeviceBuffer[float32](n)
	default:
		return newDeviceBuffer[int8](n)
	}
}

// deviceBuffer is a benchBuffer in device memory; Fill and Check copy
// through the host (outside the timed loops).
type deviceBuffer[T number] struct {
	b    *mpi.DeviceBuffer[T]
	view viewCache
}

func newDeviceBuffer[T number](n int) (benchBuffer, error) {
	b, err := mpi.AllocDevice[T](n)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDeviceUnsupported, err)
	}
	return &deviceBuffer[T]{b: b}, nil
}

func (d *deviceBuffer[T]) View(n int) mpi.Buffer {
	return d.view.get(n, func() mpi.Buffer {
		v, err := d.b.Slice(0, n)
		if err != nil {
			return d.b
		}
		return v
	})
}

// Fill writes the first n elements (only those: a -c run must not pay a
// copy of the whole max-size buffer per iteration, which the peer's timed
// round trip would include).
func (d *deviceBuffer[T]) Fill(n int, value func(int) int64) {
	v, err := d.b.Slice(0, n)
	if err != nil || n == 0 {
		return
	}
	h := make([]T, n)
	for i := range h {
		h[i] = convert[T](value(i))
	}
	v.CopyFromHost(h)
}

// Check compares the first n elements with value and counts mismatches.
func (d *deviceBuffer[T]) Check(n int, value func(int) int64) int {
	if n == 0 {
		return 0
	}
	v, err := d.b.Slice(0, n)
	if err != nil {
		return n
	}
	h := make([]T, n)
	if err := v.CopyToHost(h); err != nil {
		return n
	}
	bad := 0
	for i, x := range h {
		if x != convert[T](value(i)) {
			bad++
		}
	}
	return bad
}

// allocBuffer allocates a benchmark buffer of n elements of d at p. Every
// benchmark buffer is allocated here.
//
// A host buffer's allocation ends with a garbage collection. The buffers
// are most of the heap, so the collector's first cycle otherwise starts
// soon after they are allocated, inside the first message size's timed
// loop, where its mark phase takes a core from the polling ranks.
func allocBuffer(d Datatype, p Placement, n int) (benchBuffer, error) {
	switch p {
	case Host, "":
		var b benchBuffer
		switch d {
		case Int:
			b = newHostBuffer[int32](n)
		case Float:
			b = newHostBuffer[float32](n)
		default:
			b = newHostBuffer[int8](n)
		}
		runtime.GC()
		return b, nil
	case Device:
		if deviceAllocator == nil {
			return nil, ErrDeviceUnsupported
		}
		return deviceAllocator(d, n)
	default:
		return nil, fmt.Errorf("%w (managed memory, %s)", ErrDeviceUnsupported, p)
	}
}

// checkPlacement fails early, before any output, when o asks for memory
// allocBuffer cannot provide, or for an accelerator this process cannot
// use: "-d cuda" needs a GPU even when both sides' buffers are on the host
// (OSU initialises the device then too), rather than quietly measuring
// host memory under a CUDA title.
func checkPlacement(o *Options) error {
	if o.Accel == AccelCUDA {
		if _, err := allocBuffer(Char, Device, 0); err != nil {
			return fmt.Errorf("CUDA (-d cuda, D) needs a usable GPU: %w", err)
		}
	}
	for _, p := range []Placement{o.Src, o.Dst} {
		if p == Host {
			continue
		}
		if _, err := allocBuffer(Char, p, 0); err != nil {
			return err
		}
	}
	if o.Accel != AccelNone && o.Accel != AccelCUDA {
		return fmt.Errorf("%w (accelerator %s)", ErrDeviceUnsupported, o.Accel)
	}
	return nil
}
