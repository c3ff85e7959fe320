package osc

import (
	"runtime"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// Origin is an origin (or result) buffer of a one-sided call: n bytes at
// Ptr; GoMem marks Go memory (pinned while UCX may read or write it),
// Device memory on a GPU.
type Origin struct {
	Ptr    unsafe.Pointer
	Len    int
	GoMem  bool
	Device bool
}

// begin takes w.mu and checks that target may be accessed now; on error
// w.mu is released.
func (w *Win) begin(op string, target int) error {
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil {
		err = w.checkTarget(op, target)
	}
	if err == nil && !w.ep.canAccess(target) {
		err = winErr(op, pt2pt.ErrRMASync, "target %d is outside any access epoch (Fence, Lock, LockAll or Start first)", target)
	}
	if err != nil {
		w.mu.Unlock()
	}
	return err
}

// resolve is the remote address and key of n bytes at displacement disp
// of target (an address, for dynamic windows); w.mu held.
func (w *Win) resolve(op string, target, disp, n int) (uint64, *ucx.RemoteKey, error) {
	p := &w.peers[target]
	if w.flavor == FlavorDynamic {
		return w.resolveDyn(op, p, uint64(disp), n)
	}
	off := disp * p.unit
	if disp < 0 || n < 0 || off+n > p.size || (n > 0 && p.key == nil) {
		return 0, nil, winErr(op, pt2pt.ErrRMARange, "%d bytes at displacement %d (unit %d) of target %d's %d-byte window",
			n, disp, p.unit, target, p.size)
	}
	return p.base + uint64(off), p.key, nil
}

// Put writes o to target at displacement disp. It is complete at the
// target after the epoch's next synchronization.
func (w *Win) Put(o Origin, target, disp int) error {
	if w == nil {
		return errNilWin
	}
	return w.rma("put", o, target, disp, false)
}

// Get reads target's memory at disp into o; the data are in after the
// epoch's next synchronization (FlushLocal included).
func (w *Win) Get(o Origin, target, disp int) error {
	if w == nil {
		return errNilWin
	}
	return w.rma("get", o, target, disp, true)
}

func (w *Win) rma(op string, o Origin, target, disp int, get bool) error {
	if err := w.begin(op, target); err != nil {
		return err
	}
	defer w.mu.Unlock()
	addr, key, err := w.resolve(op, target, disp, o.Len)
	if err != nil || o.Len == 0 {
		return err
	}
	var r *ucx.RMAOp
	if get {
		r, err = w.t.Get(key, o.Ptr, o.Len, addr, o.Device)
	} else {
		r, err = w.t.Put(key, o.Ptr, o.Len, addr, o.Device)
	}
	if err != nil {
		return winErr(op, pt2pt.ErrOther, "%v", err)
	}
	if r != nil {
		// In flight: UCX holds o until the operation completes.
		w.pending[target] = append(w.pending[target], r)
		if o.GoMem {
			p := w.pins[target]
			if p == nil {
				p = new(runtime.Pinner)
				w.pins[target] = p
			}
			p.Pin((*byte)(o.Ptr))
		}
	}
	return nil
}

// getNow reads n bytes at addr under key into a fresh buffer and waits.
func (w *Win) getNow(key *ucx.RemoteKey, addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	var pin runtime.Pinner
	pin.Pin(&b[0])
	defer pin.Unpin()
	r, err := w.t.Get(key, unsafe.Pointer(&b[0]), n, addr, false)
	if err == nil {
		err = r.Wait()
	}
	return b, err
}

// putNow writes b to addr under key and waits until it is at the target.
func (w *Win) putNow(key *ucx.RemoteKey, world int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var pin runtime.Pinner
	pin.Pin(&b[0])
	defer pin.Unpin()
	r, err := w.t.Put(key, unsafe.Pointer(&b[0]), len(b), addr, false)
	if err == nil {
		err = r.Wait()
	}
	if err == nil {
		err = w.t.Flush(world)
	}
	return err
}
