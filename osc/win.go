package osc

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// Group is the communicator a window is made over: its collectives for
// set-up and its messages for post-start-complete-wait. Ranks are the
// group's; WorldRank maps them to the transport's.
type Group interface {
	Rank() int
	Size() int
	WorldRank(r int) int
	// Allgather returns every rank's contribution (of any length), in
	// rank order.
	Allgather(mine []byte) ([][]byte, error)
	Barrier() error
	Send(b []byte, dest, tag int) error
	Recv(b []byte, src, tag int) error
}

// Flavor is how a window's memory was provided (MPI_WIN_FLAVOR_*).
type Flavor int

// The window flavors.
const (
	FlavorCreate Flavor = iota
	FlavorAllocate
	FlavorShared
	FlavorDynamic
)

// Control block layout: 64-bit words, then (dynamic windows) the table of
// attached regions.
const (
	ctrlLock    = 0  // passive-target lock: shared holders, plus lockExcl
	ctrlAccLock = 8  // accumulate lock: 1 while held
	ctrlCount   = 16 // dynamic: slots of the table in use (high water)
	ctrlTable   = 64 // dynamic: first table slot
	lockExcl    = uint64(1) << 32
	// A slot: base, length, key length, then the packed key.
	slotHeader = 24
	slotKeyMax = 1000
	slotBytes  = slotHeader + slotKeyMax
	// MaxAttached is how many regions a dynamic window holds at a time.
	MaxAttached = 64
	ctrlPlain   = 64
	ctrlDynamic = ctrlTable + MaxAttached*slotBytes
)

// peer is what a rank knows of a target.
type peer struct {
	world    int
	base     uint64 // address of its window memory (0: none, dynamic)
	size     int    // bytes
	unit     int    // displacement unit
	device   bool
	key      *ucx.RemoteKey // its window memory's key (nil: none)
	ctrl     uint64         // address of its control block
	ctrlKey  *ucx.RemoteKey
	dyn      []dynRegion // dynamic: its attached regions as last read
	dynValid bool        // dyn was read in the current epoch
}

// Win is one rank's part of a window.
type Win struct {
	t      *ucx.Transport
	g      Group
	flavor Flavor
	rank   int
	base   unsafe.Pointer
	size   int
	unit   int
	device bool
	region *ucx.Region // the window memory's registration (nil: none)
	ctrl   *ucx.Region
	peers  []peer
	pin    runtime.Pinner // the window's Go memory, for its life

	mu       sync.Mutex // guards what follows and the one-sided calls' bookkeeping
	ep       epoch
	pending  map[int][]*ucx.RMAOp    // per target: operations not yet flushed
	pins     map[int]*runtime.Pinner // per target: origin buffers they use
	attached []attachment            // dynamic: this rank's regions
	freed    bool
}

// Options are a window's creation arguments.
type Options struct {
	Flavor Flavor
	// Base and Size are the window memory (Size bytes; Base nil when 0 or
	// for FlavorAllocate, which allocates). GoMem marks Go memory, which
	// the window pins for its life.
	Base   unsafe.Pointer
	Size   int
	GoMem  bool
	Device bool
	// Unit is the displacement unit (bytes per displacement step).
	Unit int
}

// errNilWin is the error of a call on a nil window.
var errNilWin = &pt2pt.OpError{Op: "win", Class: pt2pt.ErrWin, Err: fmt.Errorf("nil window")}

func winErr(op string, class error, format string, args ...any) error {
	return &pt2pt.OpError{Op: op, Class: class, Err: fmt.Errorf(format, args...)}
}

// New makes a window over g (collective). For FlavorAllocate it allocates
// Size bytes of registered host memory (Base then reports it).
func New(t *ucx.Transport, g Group, o Options) (*Win, error) {
	if o.Size < 0 {
		return nil, winErr("win create", pt2pt.ErrSize, "size %d", o.Size)
	}
	if o.Unit <= 0 {
		return nil, winErr("win create", pt2pt.ErrDisp, "displacement unit %d", o.Unit)
	}
	if o.Device && !t.RMADevice() {
		return nil, winErr("win create", pt2pt.ErrBuffer, "this UCX build does not reach device memory (no CUDA support)")
	}
	w := &Win{t: t, g: g, flavor: o.Flavor, rank: g.Rank(), base: o.Base, size: o.Size, unit: o.Unit,
		device: o.Device, pending: map[int][]*ucx.RMAOp{}, pins: map[int]*runtime.Pinner{}}
	err := w.register(o)
	var recs [][]byte
	if err == nil {
		var mine []byte
		if mine, err = w.record(); err == nil {
			recs, err = g.Allgather(mine)
		}
	} else {
		// The others wait in the exchange: give them an empty record.
		_, _ = g.Allgather(nil)
	}
	if err == nil {
		err = w.connect(recs)
	}
	if err != nil {
		w.release()
		return nil, err
	}
	return w, nil
}

// register maps the window memory and the control block.
func (w *Win) register(o Options) error {
	var err error
	switch {
	case o.Flavor == FlavorAllocate && o.Size > 0:
		if w.region, err = w.t.MemAlloc(o.Size); err == nil {
			w.base = w.region.Base()
		}
	case o.Flavor != FlavorDynamic && o.Size > 0:
		if o.GoMem {
			w.pin.Pin((*byte)(o.Base))
		}
		w.region, err = w.t.MemMap(o.Base, o.Size, o.Device)
	}
	if err != nil {
		return winErr("win create", pt2pt.ErrNoMem, "registering the window memory: %v", err)
	}
	n := ctrlPlain
	if o.Flavor == FlavorDynamic {
		n = ctrlDynamic
	}
	if w.ctrl, err = w.t.MemAlloc(n); err != nil {
		return winErr("win create", pt2pt.ErrNoMem, "control block: %v", err)
	}
	clear(unsafe.Slice((*byte)(w.ctrl.Base()), n))
	return nil
}

// record is this rank's part of the exchange: base, size, unit, device,
// control block address, and the two packed keys.
func (w *Win) record() ([]byte, error) {
	var key []byte
	var err error
	if w.region != nil {
		if key, err = w.t.PackKey(w.region); err != nil {
			return nil, err
		}
	}
	ck, err := w.t.PackKey(w.ctrl)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 48, 48+len(key)+len(ck))
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(uintptr(w.base)))
	le.PutUint64(b[8:], uint64(w.size))
	le.PutUint64(b[16:], uint64(w.unit))
	if w.device {
		b[24] = 1
	}
	le.PutUint64(b[32:], uint64(uintptr(w.ctrl.Base())))
	le.PutUint32(b[40:], uint32(len(key)))
	le.PutUint32(b[44:], uint32(len(ck)))
	return append(append(b, key...), ck...), nil
}

// connect unpacks every rank's record.
func (w *Win) connect(recs [][]byte) error {
	le := binary.LittleEndian
	w.peers = make([]peer, len(recs))
	for r, b := range recs {
		if len(b) < 48 {
			return winErr("win create", pt2pt.ErrOther, "rank %d failed to create its part of the window", r)
		}
		p := &w.peers[r]
		p.world = w.g.WorldRank(r)
		p.base, p.size, p.unit = le.Uint64(b[0:]), int(le.Uint64(b[8:])), int(le.Uint64(b[16:]))
		p.device, p.ctrl = b[24] == 1, le.Uint64(b[32:])
		nk, nc := int(le.Uint32(b[40:])), int(le.Uint32(b[44:]))
		var err error
		if nk > 0 {
			if p.key, err = w.t.UnpackKey(p.world, b[48:48+nk]); err != nil {
				return err
			}
		}
		if p.ctrlKey, err = w.t.UnpackKey(p.world, b[48+nk:48+nk+nc]); err != nil {
			return err
		}
	}
	return nil
}

// release gives back what the window holds locally.
func (w *Win) release() {
	for i := range w.peers {
		w.t.DestroyKey(w.peers[i].key)
		w.t.DestroyKey(w.peers[i].ctrlKey)
		w.dropDyn(&w.peers[i])
	}
	for _, a := range w.attached {
		_ = w.t.MemUnmap(a.region)
	}
	_ = w.t.MemUnmap(w.region)
	_ = w.t.MemUnmap(w.ctrl)
	w.pin.Unpin()
	for _, p := range w.pins {
		p.Unpin()
	}
}

// Free ends the window (collective): it waits for every rank to finish
// its accesses, then releases the memory and keys.
func (w *Win) Free() error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	if w.freed {
		w.mu.Unlock()
		return winErr("win free", pt2pt.ErrWin, "window already freed")
	}
	if w.ep.locked() || w.ep.access != nil || w.ep.exposure != nil {
		w.mu.Unlock()
		return winErr("win free", pt2pt.ErrRMASync, "an access or exposure epoch is still open")
	}
	err := w.flushAllLocked()
	w.freed = true
	w.mu.Unlock()
	if berr := w.g.Barrier(); err == nil {
		err = berr
	}
	w.release()
	return err
}

// Base is this rank's window memory (nil when empty or dynamic).
func (w *Win) Base() unsafe.Pointer { return w.base }

// Size is this rank's window size in bytes.
func (w *Win) Size() int { return w.size }

// Unit is this rank's displacement unit.
func (w *Win) Unit() int { return w.unit }

// Flavor is how the window was made.
func (w *Win) Flavor() Flavor { return w.flavor }

// Device reports whether this rank's window memory is on a GPU.
func (w *Win) Device() bool { return w.device }

// PeerSize is target's window size in bytes and displacement unit.
func (w *Win) PeerSize(target int) (int, int) { return w.peers[target].size, w.peers[target].unit }
