package osc

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// Dynamic windows: each rank lists the regions it has attached in its
// control block's table (slot: base, length, key length, packed key; a
// zero length is a free slot). An origin reads a target's table with a
// get the first time it addresses that target in an epoch, and unpacks
// the keys; MPI requires attachment to precede, by synchronization, any
// access to the memory, so a table read at the epoch's start is current.

// attachment is a region this rank attached.
type attachment struct {
	base   uintptr
	n      int
	region *ucx.Region
	slot   int
	pin    *runtime.Pinner
}

// dynRegion is a target's attached region as an origin knows it.
type dynRegion struct {
	base uint64
	n    int
	key  *ucx.RemoteKey
}

func (w *Win) slot(i int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(w.ctrl.Base(), ctrlTable+i*slotBytes)), slotBytes)
}

func (w *Win) ctrlWord(off int) *uint64 { return (*uint64)(unsafe.Add(w.ctrl.Base(), off)) }

// Attach exposes n bytes at p in a dynamic window (local; peers see it
// after their next synchronization). Displacements into it are its
// addresses (uintptr(p) + offset).
func (w *Win) Attach(o Origin) error {
	if w == nil {
		return errNilWin
	}
	const op = "win attach"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkOpen(op); err != nil {
		return err
	}
	if w.flavor != FlavorDynamic {
		return winErr(op, pt2pt.ErrRMAFlavor, "Attach needs a dynamic window")
	}
	if o.Len <= 0 || o.Ptr == nil {
		return winErr(op, pt2pt.ErrRMAAttach, "empty region")
	}
	if len(w.attached) >= MaxAttached {
		return winErr(op, pt2pt.ErrRMAAttach, "%d regions attached already (the most a window holds)", MaxAttached)
	}
	a := attachment{base: uintptr(o.Ptr), n: o.Len, slot: -1}
	for _, b := range w.attached {
		if a.base < b.base+uintptr(b.n) && b.base < a.base+uintptr(a.n) {
			return winErr(op, pt2pt.ErrRMAAttach, "region overlaps one attached already")
		}
	}
	if o.GoMem {
		a.pin = new(runtime.Pinner)
		a.pin.Pin((*byte)(o.Ptr))
	}
	var err error
	var key []byte
	if a.region, err = w.t.MemMap(o.Ptr, o.Len, o.Device); err == nil {
		key, err = w.t.PackKey(a.region)
	}
	if err == nil && len(key) > slotKeyMax {
		err = winErr(op, pt2pt.ErrRMAAttach, "remote key of %d bytes (at most %d)", len(key), slotKeyMax)
	}
	if err != nil {
		_ = w.t.MemUnmap(a.region)
		if a.pin != nil {
			a.pin.Unpin()
		}
		return winErr(op, pt2pt.ErrRMAAttach, "%v", err)
	}
	w.publish(&a, key)
	w.attached = append(w.attached, a)
	return nil
}

// publish writes a's slot, its length last (a non-zero length marks the
// slot in use).
func (w *Win) publish(a *attachment, key []byte) {
	used := map[int]bool{}
	for _, b := range w.attached {
		used[b.slot] = true
	}
	for a.slot = 0; used[a.slot]; a.slot++ {
	}
	s := w.slot(a.slot)
	le := binary.LittleEndian
	le.PutUint64(s[0:], uint64(a.base))
	le.PutUint64(s[16:], uint64(len(key)))
	copy(s[slotHeader:], key)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&s[8])), uint64(a.n))
	if c := w.ctrlWord(ctrlCount); atomic.LoadUint64(c) < uint64(a.slot+1) {
		atomic.StoreUint64(c, uint64(a.slot+1))
	}
}

// Detach withdraws the region attached at p.
func (w *Win) Detach(p unsafe.Pointer) error {
	if w == nil {
		return errNilWin
	}
	const op = "win detach"
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkOpen(op); err != nil {
		return err
	}
	if w.flavor != FlavorDynamic {
		return winErr(op, pt2pt.ErrRMAFlavor, "Detach needs a dynamic window")
	}
	for i, a := range w.attached {
		if a.base != uintptr(p) {
			continue
		}
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&w.slot(a.slot)[8])), 0)
		err := w.t.MemUnmap(a.region)
		if a.pin != nil {
			a.pin.Unpin()
		}
		w.attached = append(w.attached[:i], w.attached[i+1:]...)
		return err
	}
	return winErr(op, pt2pt.ErrRMAAttach, "no region attached at %p", p)
}

// invalidateDyn makes every target's table be read again (a new epoch);
// w.mu held.
func (w *Win) invalidateDyn() {
	for i := range w.peers {
		w.peers[i].dynValid = false
	}
}

func (w *Win) dropDyn(p *peer) {
	for _, r := range p.dyn {
		w.t.DestroyKey(r.key)
	}
	p.dyn, p.dynValid = nil, false
}

// fetchDyn reads p's table.
func (w *Win) fetchDyn(p *peer) error {
	cnt, err := w.getNow(p.ctrlKey, p.ctrl+ctrlCount, 8)
	if err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint64(cnt))
	if n > MaxAttached {
		n = MaxAttached
	}
	tab, err := w.getNow(p.ctrlKey, p.ctrl+ctrlTable, n*slotBytes)
	if err != nil {
		return err
	}
	w.dropDyn(p)
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		s := tab[i*slotBytes : (i+1)*slotBytes]
		ln, kl := int(le.Uint64(s[8:])), int(le.Uint64(s[16:]))
		if ln == 0 || kl <= 0 || kl > slotKeyMax {
			continue
		}
		k, err := w.t.UnpackKey(p.world, s[slotHeader:slotHeader+kl])
		if err != nil {
			return err
		}
		p.dyn = append(p.dyn, dynRegion{base: le.Uint64(s[0:]), n: ln, key: k})
	}
	p.dynValid = true
	return nil
}

// resolveDyn finds the attached region of p holding n bytes at addr.
func (w *Win) resolveDyn(op string, p *peer, addr uint64, n int) (uint64, *ucx.RemoteKey, error) {
	for pass := 0; pass < 2; pass++ {
		if !p.dynValid || pass == 1 {
			if err := w.fetchDyn(p); err != nil {
				return 0, nil, winErr(op, pt2pt.ErrOther, "reading the target's attached regions: %v", err)
			}
		}
		for _, r := range p.dyn {
			if addr >= r.base && addr+uint64(n) <= r.base+uint64(r.n) {
				return addr, r.key, nil
			}
		}
	}
	return 0, nil, winErr(op, pt2pt.ErrRMARange, "%d bytes at address %#x are in no region the target attached", n, addr)
}
