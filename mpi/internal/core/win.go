package core

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/gompix/gompix/internal/shm"
	"github.com/gompix/gompix/osc"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// Win is a window: memory each rank of a communicator exposes to the
// others' one-sided calls (package osc does the work). Displacements are
// in units of the target's displacement unit, as in MPI; for dynamic
// windows they are addresses (Address).
type Win struct {
	w    *osc.Win
	comm *Comm // the window's own duplicate of its communicator
	// Shared windows: the segment, and every rank's part of it.
	seg   *shm.Segment
	parts []sharedPart
}

type sharedPart struct{ off, size, unit int }

// LockType is a passive-target lock's kind.
type LockType = osc.LockType

// The lock types.
const (
	LockExclusive = osc.LockExclusive
	LockShared    = osc.LockShared
)

// Assertions of the synchronization calls (MPI_MODE_*); 0 asserts nothing.
const (
	ModeNoCheck   = osc.ModeNoCheck
	ModeNoStore   = osc.ModeNoStore
	ModeNoPut     = osc.ModeNoPut
	ModeNoPrecede = osc.ModeNoPrecede
	ModeNoSucceed = osc.ModeNoSucceed
)

// RMA error classes.
var (
	ErrWin         error = pt2pt.ErrWin
	ErrBase        error = pt2pt.ErrBase
	ErrLockType    error = pt2pt.ErrLockType
	ErrRMAConflict error = pt2pt.ErrRMAConflict
	ErrRMASync     error = pt2pt.ErrRMASync
	ErrSize        error = pt2pt.ErrSize
	ErrDisp        error = pt2pt.ErrDisp
	ErrRMARange    error = pt2pt.ErrRMARange
	ErrRMAAttach   error = pt2pt.ErrRMAAttach
	ErrRMAShared   error = pt2pt.ErrRMAShared
	ErrRMAFlavor   error = pt2pt.ErrRMAFlavor
)

// rmaTransport is the UCX transport c's windows use.
func rmaTransport(op string, c *Comm) (*ucx.Transport, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	initMu.Lock()
	defer initMu.Unlock()
	if cur == nil || cur.rt.UCX == nil || c.pc.Engine() != cur.rt.Engine {
		return nil, &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("windows need a communicator of the UCX runtime Init made")}
	}
	return cur.rt.UCX, nil
}

// newWin makes a window over a duplicate of c.
func newWin(op string, c *Comm, o osc.Options) (*Win, error) {
	t, err := rmaTransport(op, c)
	if err != nil {
		return nil, err
	}
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	w, err := osc.New(t, winGroup{d}, o)
	if err != nil {
		_ = d.Free()
		return nil, face(err)
	}
	return &Win{w: w, comm: d}, nil
}

// WinCreate makes a window over buf (collective over c); disp is the
// displacement unit (typically buf's element size). A device buffer makes
// a window in GPU memory where UCX moves device memory.
func (c *Comm) WinCreate(buf Buffer, dispUnit int) (*Win, error) {
	var i bufInfo
	describe(buf, &i)
	m := pt2pt.Mem{}
	if buf != nil && !i.none {
		m = buf.mem()
	}
	return newWin("win create", c, osc.Options{Flavor: osc.FlavorCreate, Base: m.Ptr, Size: m.Len,
		GoMem: m.Kind == pt2pt.Host, Device: m.Kind == pt2pt.Device, Unit: dispUnit})
}

// WinAllocate makes a window over n new elements of T on each rank
// (collective) and returns this rank's part; the displacement unit is
// T's size. The memory is UCX's (registered where its transports reach
// it fastest) and is freed with the window.
func WinAllocate[T Elem](c *Comm, n int) (*Win, []T, error) {
	size := dtypeOf[T]().Size()
	if n < 0 {
		return nil, nil, &Error{Op: "win allocate", Class: ErrSize, Err: fmt.Errorf("%d elements", n)}
	}
	w, err := newWin("win allocate", c, osc.Options{Flavor: osc.FlavorAllocate, Size: n * size, Unit: size})
	if err != nil {
		return nil, nil, err
	}
	return w, winSlice[T](w.w.Base(), n), nil
}

func winSlice[T Elem](p unsafe.Pointer, n int) []T {
	if p == nil || n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(p), n)
}

// WinCreateDynamic makes a window with no memory (collective): ranks
// Attach memory to it, and origins address it by Address.
func (c *Comm) WinCreateDynamic() (*Win, error) {
	return newWin("win create_dynamic", c, osc.Options{Flavor: osc.FlavorDynamic, Unit: 1})
}

// Address is buf's address, the displacement of its first element in a
// dynamic window (MPI_Get_address).
func Address(buf Buffer) int {
	if buf == nil {
		return 0
	}
	return int(uintptr(buf.mem().Ptr))
}

// Attach exposes buf in a dynamic window (local).
func (w *Win) Attach(buf Buffer) error {
	if err := checkBuf("win attach", buf); err != nil {
		return err
	}
	m := buf.mem()
	return face(w.o().Attach(osc.Origin{Ptr: m.Ptr, Len: m.Len, GoMem: m.Kind == pt2pt.Host, Device: m.Kind == pt2pt.Device}))
}

// Detach withdraws buf from a dynamic window.
func (w *Win) Detach(buf Buffer) error {
	if err := checkBuf("win detach", buf); err != nil {
		return err
	}
	return face(w.o().Detach(buf.mem().Ptr))
}

// Free ends the window (collective).
func (w *Win) Free() error {
	err := face(w.o().Free())
	if w == nil || err != nil {
		return err
	}
	if ferr := w.comm.Free(); err == nil {
		err = ferr
	}
	if w.seg != nil {
		closeSegment(w.seg)
		w.seg = nil
	}
	return err
}

// Size is this rank's window size in bytes, and DispUnit its displacement
// unit.
func (w *Win) Size() int {
	if w == nil {
		return 0
	}
	return w.w.Size()
}

func (w *Win) DispUnit() int {
	if w == nil {
		return 0
	}
	return w.w.Unit()
}

// Comm is the window's communicator (its own duplicate of the one it was
// made over, with the same ranks).
func (w *Win) Comm() *Comm { return w.comm }

// winGroup is the window's communicator as package osc uses it.
type winGroup struct{ c *Comm }

func (g winGroup) Rank() int           { return g.c.Rank() }
func (g winGroup) Size() int           { return g.c.Size() }
func (g winGroup) WorldRank(r int) int { return g.c.pc.WorldRank(r) }
func (g winGroup) Barrier() error      { return g.c.Barrier() }
func (g winGroup) Send(b []byte, dest, tag int) error {
	return g.c.Send(Slice(b), dest, tag)
}
func (g winGroup) Recv(b []byte, src, tag int) error {
	_, err := g.c.Recv(Slice(b), src, tag)
	return err
}

// Allgather exchanges records of any length: the lengths first.
func (g winGroup) Allgather(mine []byte) ([][]byte, error) {
	n := g.c.Size()
	lens := make([]int64, n)
	if err := g.c.Allgather(Slice([]int64{int64(len(mine))}), Slice(lens)); err != nil {
		return nil, err
	}
	counts, displs, total := make([]int, n), make([]int, n), 0
	for r, l := range lens {
		counts[r], displs[r] = int(l), total
		total += int(l)
	}
	all := make([]byte, total)
	if err := g.c.Allgatherv(Slice(append(mine, 0)[:len(mine)]), Slice(all), counts, displs); err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for r := range out {
		out[r] = all[displs[r] : displs[r]+counts[r]]
	}
	return out, nil
}

// WinAllocateShared makes a window over n new elements of T on each rank
// in one shared-memory segment (collective; every rank of c must be on
// this node) and returns this rank's part. SharedQuery gives any rank's
// part for direct loads and stores.
func WinAllocateShared[T Elem](c *Comm, n int) (*Win, []T, error) {
	const op = "win allocate_shared"
	size := dtypeOf[T]().Size()
	if n < 0 {
		return nil, nil, &Error{Op: op, Class: ErrSize, Err: fmt.Errorf("%d elements", n)}
	}
	if _, err := rmaTransport(op, c); err != nil {
		return nil, nil, err
	}
	seg, parts, err := sharedSegment(op, c, n*size, size)
	if err != nil {
		return nil, nil, err
	}
	me := parts[c.Rank()]
	base := unsafe.Pointer(nil)
	if me.size > 0 {
		base = unsafe.Pointer(&seg.Bytes()[me.off])
	}
	w, err := newWin(op, c, osc.Options{Flavor: osc.FlavorShared, Base: base, Size: me.size, Unit: size})
	if err != nil {
		closeSegment(seg)
		return nil, nil, err
	}
	w.seg, w.parts = seg, parts
	return w, winSlice[T](base, n), nil
}

// sharedSegment makes the segment of a shared window: every rank's part
// (64-byte aligned, in rank order), rank 0 creating it.
func sharedSegment(op string, c *Comm, bytes, unit int) (*shm.Segment, []sharedPart, error) {
	me := worldNode(c.pc.WorldRank(c.Rank()))
	rec := make([]int64, 3*c.Size())
	mine := []int64{int64(bytes), int64(unit), int64(me)}
	if err := c.Allgather(Slice(mine), Slice(rec)); err != nil {
		return nil, nil, err
	}
	parts, total := make([]sharedPart, c.Size()), 0
	for r := range parts {
		if int(rec[3*r+2]) != me {
			return nil, nil, &Error{Op: op, Class: ErrRMAShared, Err: fmt.Errorf("rank %d is on another node", r)}
		}
		parts[r] = sharedPart{off: total, size: int(rec[3*r]), unit: int(rec[3*r+1])}
		total += (int(rec[3*r]) + 63) &^ 63
	}
	total = max(total, 64)
	var name [256]byte
	var seg *shm.Segment
	var err error
	if c.Rank() == 0 {
		if seg, err = shm.Create(fmt.Sprintf("%swin%d-", segmentPrefix, os.Getpid()), total); err == nil {
			copy(name[:], seg.Name())
		}
	}
	if berr := c.Bcast(Slice(name[:]), 0); berr != nil {
		return nil, nil, berr
	}
	if name[0] == 0 {
		return nil, nil, &Error{Op: op, Class: ErrRMAShared, Err: fmt.Errorf("creating the segment: %v", err)}
	}
	if c.Rank() != 0 {
		n := 0
		for n < len(name) && name[n] != 0 {
			n++
		}
		seg, err = shm.Open(string(name[:n]), total)
	}
	ok := int32(1)
	if err != nil {
		ok = 0
	}
	all := []int32{0}
	if aerr := c.Allreduce(Slice([]int32{ok}), Slice(all), Min); aerr != nil || all[0] == 0 {
		closeSegment(seg)
		return nil, nil, &Error{Op: op, Class: ErrRMAShared, Err: fmt.Errorf("mapping the segment: %v %v", err, aerr)}
	}
	if c.Rank() == 0 {
		_ = seg.Unlink()
	}
	return seg, parts, nil
}

// SharedQuery returns rank's part of a shared window, mapped here, and its
// displacement unit.
func SharedQuery[T Elem](w *Win, rank int) ([]T, int, error) {
	const op = "win shared_query"
	if w == nil {
		return nil, 0, &Error{Op: op, Class: ErrWin, Err: fmt.Errorf("nil window")}
	}
	if w.seg == nil {
		return nil, 0, &Error{Op: op, Class: ErrRMAFlavor, Err: fmt.Errorf("not a shared window")}
	}
	if rank < 0 || rank >= len(w.parts) {
		return nil, 0, &Error{Op: op, Class: ErrRank, Err: fmt.Errorf("rank %d of %d", rank, len(w.parts))}
	}
	p := w.parts[rank]
	esz := dtypeOf[T]().Size()
	if p.size == 0 {
		return []T{}, p.unit, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&w.seg.Bytes()[p.off])), p.size/esz), p.unit, nil
}
