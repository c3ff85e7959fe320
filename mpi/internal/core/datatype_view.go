package core

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
)

// View is a Buffer of Len() elements of a derived datatype laid over a Go
// slice: element i starts i extents after the slice's first byte. Every
// point-to-point operation and collective accepts it; the data are packed
// into a contiguous staging buffer before they are sent and unpacked from
// one after they are received, so the transport only ever sees contiguous
// bytes. A receive's Status.Count counts elements of the datatype
// (Undefined for a partial one). A receive into a View whose Request is
// freed (Request.Free) before it completes leaves the View unchanged.
type View struct {
	data  []byte // the slice's bytes; element 0's origin is data[0]
	dt    *Datatype
	count int
}

// plainTypes caches plainData per Go element type.
var plainTypes sync.Map // reflect.Type -> bool

// ViewOf lays count elements of dt over s. T may be any type without
// pointers (numbers, arrays and structs of them); every byte the elements
// touch must lie within s (ErrBuffer), count must not be negative
// (ErrCount), and a datatype whose entries overlap cannot be received into
// (MPI forbids it; operations refuse such a View with ErrType).
func ViewOf[T any](s []T, dt *Datatype, count int) (*View, error) {
	const op = "view"
	rt := reflect.TypeFor[T]()
	plain, ok := plainTypes.Load(rt)
	if !ok {
		plain = plainData(rt)
		plainTypes.Store(rt, plain)
	}
	if !plain.(bool) {
		return nil, &Error{Op: op, Class: ErrType, Err: fmt.Errorf("%v holds pointers: received bytes cannot be stored into it", rt)}
	}
	var b []byte
	if len(s) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(rt.Size()))
	}
	return newView(op, b, dt, count)
}

// ViewOfBuffer lays count elements of dt over a host Buffer's memory (its
// bytes, whatever its element type). Derived datatypes on device memory
// are refused with ErrType: packing them must run in a device kernel,
// which gompix does not have yet.
func ViewOfBuffer(b Buffer, dt *Datatype, count int) (*View, error) {
	const op = "view"
	if err := checkBuf(op, b); err != nil {
		return nil, err
	}
	if _, ok := b.(*View); ok {
		return nil, &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("a View over a View")}
	}
	if bufferDevice(b) >= 0 {
		return nil, &Error{Op: op, Class: ErrType, Err: fmt.Errorf("derived datatypes on device buffers are not supported (they need a device pack kernel)")}
	}
	return newView(op, b.hostBytes(), dt, count)
}

func newView(op string, b []byte, dt *Datatype, count int) (*View, error) {
	if dt == nil {
		return nil, &Error{Op: op, Class: ErrType, Err: fmt.Errorf("nil datatype")}
	}
	if err := dt.l.CheckSpan(count, 0, len(b)); err != nil {
		return nil, typeErr(op, err)
	}
	return &View{data: b, dt: dt, count: count}, nil
}

// Datatype is the view's datatype.
func (v *View) Datatype() *Datatype { return v.dt }

// Len is the number of elements of the datatype.
func (v *View) Len() int { return v.count }

// Type is the basic type of the datatype's entries (Elem); uint8 (Go's
// byte) when it mixes several, so that a []byte of its packed data matches
// it.
func (v *View) Type() Type {
	e, ok := v.dt.l.Elem()
	if !ok {
		return Type{dtype.Uint8}
	}
	return Type{e}
}

// The transport never sees a View: every operation stages it first
// (stage), so these describe no memory.
func (v *View) mem() pt2pt.Mem        { return pt2pt.Mem{} }
func (v *View) pin(*runtime.Pinner)   {}
func (v *View) hostBytes() []byte     { return nil }
func (v *View) slice(int, int) Buffer { return v }
func (v *View) info() ([]byte, int, dtype.Type, int, bool) {
	return nil, v.count, v.Type().t, -1, false
}

// packed is a contiguous staging buffer of a View's data, typed with the
// datatype's basic type (bytes for a mixed one) so that reductions and
// type checks see the elements the View holds.
type packed struct {
	b []byte
	t dtype.Type
}

// stage returns a staging buffer for v's data, holding them when fill is
// set (a send, or a receive that may leave part of the View as it was).
func (v *View) stage(fill bool) *packed {
	n := v.count * v.dt.Size()
	words := make([]uint64, (n+7)/8) // 8-byte aligned, for reductions
	p := &packed{t: v.Type().t}
	if n > 0 {
		p.b = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	}
	if fill {
		v.dt.l.Pack(p.b, v.data, 0, v.count)
	}
	return p
}

// unstage stores the first n bytes of p into v.
func (v *View) unstage(p *packed, n int) {
	v.dt.l.Unpack(v.data, p.b[:min(n, len(p.b))], 0, v.count)
}

// checkRecv refuses a View MPI forbids receiving into.
func (v *View) checkRecv(op string) error {
	if v.count > 0 && v.dt.l.Overlaps() {
		return &Error{Op: op, Class: ErrType, Err: fmt.Errorf("datatype %v has overlapping entries: it cannot be received into", v.dt)}
	}
	return nil
}

func (p *packed) Len() int   { return len(p.b) / max(p.t.Size(), 1) }
func (p *packed) Type() Type { return Type{p.t} }
func (p *packed) mem() pt2pt.Mem {
	return pt2pt.HostMem(p.b)
}
func (p *packed) pin(pn *runtime.Pinner) {
	if len(p.b) > 0 {
		pn.Pin(&p.b[0])
	}
}
func (p *packed) hostBytes() []byte { return p.b }
func (p *packed) slice(off, n int) Buffer {
	sz := p.t.Size()
	return &packed{b: p.b[off*sz : (off+n)*sz], t: p.t}
}
func (p *packed) info() ([]byte, int, dtype.Type, int, bool) {
	return p.hostBytes(), p.Len(), p.t, -1, false
}

// Pack copies v's elements into dst, contiguous and in type-map order
// (MPI_Pack), and returns the number of bytes written: PackSize's.
func Pack(dst []byte, v *View) (int, error) {
	if v == nil {
		return 0, &Error{Op: "pack", Class: ErrBuffer, Err: fmt.Errorf("nil view")}
	}
	if n := v.count * v.dt.Size(); len(dst) < n {
		return 0, &Error{Op: "pack", Class: ErrBuffer, Err: fmt.Errorf("%d bytes of room for %d packed bytes", len(dst), n)}
	}
	return v.dt.l.Pack(dst, v.data, 0, v.count), nil
}

// Unpack stores packed bytes from src into v's elements (MPI_Unpack) and
// returns the number of bytes used: PackSize's.
func Unpack(src []byte, v *View) (int, error) {
	if v == nil {
		return 0, &Error{Op: "unpack", Class: ErrBuffer, Err: fmt.Errorf("nil view")}
	}
	if n := v.count * v.dt.Size(); len(src) < n {
		return 0, &Error{Op: "unpack", Class: ErrBuffer, Err: fmt.Errorf("%d packed bytes for %d", len(src), n)}
	}
	return v.dt.l.Unpack(v.data, src, 0, v.count), nil
}

// PackSize is the number of bytes Pack writes for count elements of dt
// (MPI_Pack_size, which is exact here).
func PackSize(count int, dt *Datatype) (int, error) {
	switch {
	case dt == nil:
		return 0, &Error{Op: "pack size", Class: ErrType, Err: fmt.Errorf("nil datatype")}
	case count < 0:
		return 0, &Error{Op: "pack size", Class: ErrCount, Err: fmt.Errorf("count %d is negative", count)}
	}
	return count * dt.Size(), nil
}
