package osc

import (
	"bytes"
	"encoding/binary"

	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// AccKind is what an accumulate does with the target.
type AccKind int

// The accumulate kinds: combine with a predefined operation, replace
// (MPI_REPLACE), or leave it (MPI_NO_OP, GetAccumulate's fetch).
const (
	AccReduce AccKind = iota
	AccReplace
	AccNoOp
)

// AccOp is an accumulate's operation.
type AccOp struct {
	Kind AccKind
	Op   dtype.Op // for AccReduce
}

// path is how an accumulate is made atomic (the package comment says why).
type path int

const (
	pathNative path = iota // one UCP atomic per element
	pathCAS                // a compare-and-swap loop per element
	pathLocked             // get, combine, put under the accumulate lock
)

// choose picks the path for elements of t with a on target p.
func choose(p *peer, t dtype.Type, a AccOp) (path, ucx.AtomicOp) {
	size := t.Size()
	if p.device || (size != 4 && size != 8) {
		return pathLocked, 0
	}
	switch a.Kind {
	case AccReplace:
		return pathNative, ucx.AtomicSwap
	case AccNoOp:
		return pathNative, ucx.AtomicAdd // add 0: an atomic read
	}
	if t.IsFloat() || t.IsComplex() {
		return pathCAS, 0
	}
	// Bitwise operations take the compare-and-swap path too: UCX 1.13's
	// self transport (a rank's access to its own window) applies a
	// fetching AND, OR or XOR to the old value instead of the operand.
	if a.Op == dtype.Sum {
		return pathNative, ucx.AtomicAdd
	}
	return pathCAS, 0
}

// Accumulate combines origin (elements of t) into target at disp with a;
// with result set (GetAccumulate) the target's previous contents are
// written there. Both are host memory. Element-wise atomic with respect
// to other accumulates; complete at the target when it returns.
func (w *Win) Accumulate(origin, result []byte, t dtype.Type, a AccOp, target, disp int) error {
	if w == nil {
		return errNilWin
	}
	op := "accumulate"
	if result != nil {
		op = "get_accumulate"
	}
	if a.Kind == AccReduce && !a.Op.Supports(t) {
		return winErr(op, dtype.ErrOp, "%v on %v", a.Op, t)
	}
	if a.Kind == AccNoOp && result == nil {
		return nil
	}
	n := len(origin)
	if a.Kind == AccNoOp {
		n = len(result)
	}
	if n%t.Size() != 0 || (result != nil && len(result) != n) {
		return winErr(op, pt2pt.ErrCount, "%d origin and %d result bytes of %v", len(origin), len(result), t)
	}
	if err := w.begin(op, target); err != nil {
		return err
	}
	defer w.mu.Unlock()
	addr, key, err := w.resolve(op, target, disp, n)
	if err != nil || n == 0 {
		return err
	}
	p := &w.peers[target]
	switch pth, aop := choose(p, t, a); pth {
	case pathNative:
		err = w.accNative(key, addr, origin, result, t.Size(), aop, a.Kind == AccNoOp)
	case pathCAS:
		err = w.accCAS(key, addr, origin, result, t, a)
	default:
		err = w.locked(p, func() error { return w.accLocked(p, key, addr, origin, result, nil, t, a) })
	}
	if err != nil {
		return winErr(op, pt2pt.ErrOther, "%v", err)
	}
	return nil
}

func load(b []byte, size int) uint64 {
	if size == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func store(b []byte, size int, v uint64) {
	if size == 4 {
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b, v)
}

// accNative applies one UCP atomic per element.
func (w *Win) accNative(key *ucx.RemoteKey, addr uint64, origin, result []byte, size int, aop ucx.AtomicOp, noop bool) error {
	n := max(len(origin), len(result))
	for i := 0; i < n; i += size {
		var v uint64
		if !noop {
			v = load(origin[i:], size)
		}
		old, err := w.t.Atomic(key, aop, size, v, 0, result != nil || aop == ucx.AtomicSwap, addr+uint64(i))
		if err != nil {
			return err
		}
		if result != nil {
			store(result[i:], size, old)
		}
	}
	return nil
}

// accCAS combines each element by compare-and-swap until no other update
// came in between.
func (w *Win) accCAS(key *ucx.RemoteKey, addr uint64, origin, result []byte, t dtype.Type, a AccOp) error {
	size := t.Size()
	cur := make([]byte, size)
	for i := 0; i < len(origin); i += size {
		ea := addr + uint64(i)
		old, err := w.t.Atomic(key, ucx.AtomicAdd, size, 0, 0, true, ea)
		for err == nil {
			store(cur, size, old)
			if err = dtype.Reduce(a.Op, t, cur, origin[i:i+size]); err != nil {
				break
			}
			var prev uint64
			prev, err = w.t.Atomic(key, ucx.AtomicCSwap, size, old, load(cur, size), true, ea)
			if err == nil && prev == old {
				break
			}
			old = prev
		}
		if err != nil {
			return err
		}
		if result != nil {
			store(result[i:], size, old)
		}
	}
	return nil
}

// locked runs f holding target p's accumulate lock.
func (w *Win) locked(p *peer, f func() error) error {
	for try := 0; ; try++ {
		old, err := w.t.Atomic(p.ctrlKey, ucx.AtomicCSwap, 8, 0, 1, true, p.ctrl+ctrlAccLock)
		if err != nil {
			return err
		}
		if old == 0 {
			break
		}
		w.backoff(try)
	}
	err := f()
	if _, rerr := w.t.Atomic(p.ctrlKey, ucx.AtomicSwap, 8, 0, 0, true, p.ctrl+ctrlAccLock); err == nil {
		err = rerr
	}
	return err
}

// accLocked reads the target, combines and writes it back (the caller
// holds the accumulate lock). With compare set it is a compare-and-swap:
// origin is written only where the target equals compare.
func (w *Win) accLocked(p *peer, key *ucx.RemoteKey, addr uint64, origin, result, compare []byte, t dtype.Type, a AccOp) error {
	n := max(len(origin), len(result))
	cur, err := w.getNow(key, addr, n)
	if err != nil {
		return err
	}
	if result != nil {
		copy(result, cur)
	}
	switch {
	case compare != nil:
		if !bytes.Equal(cur, compare) {
			return nil
		}
		cur = origin
	case a.Kind == AccNoOp:
		return nil
	case a.Kind == AccReplace:
		cur = origin
	default:
		if err := dtype.Reduce(a.Op, t, cur, origin); err != nil {
			return err
		}
	}
	return w.putNow(key, p.world, addr, append([]byte(nil), cur...))
}

// CompareAndSwap writes origin (one element of t) to target at disp if
// the target equals compare, and returns the previous value in result.
func (w *Win) CompareAndSwap(origin, compare, result []byte, t dtype.Type, target, disp int) error {
	if w == nil {
		return errNilWin
	}
	const op = "compare_and_swap"
	size := t.Size()
	if len(origin) != size || len(compare) != size || len(result) != size {
		return winErr(op, pt2pt.ErrCount, "want one element of %v each", t)
	}
	if t.IsFloat() || t.IsComplex() {
		return winErr(op, dtype.ErrType, "compare-and-swap takes integer types, not %v", t)
	}
	if err := w.begin(op, target); err != nil {
		return err
	}
	defer w.mu.Unlock()
	addr, key, err := w.resolve(op, target, disp, size)
	if err != nil {
		return err
	}
	p := &w.peers[target]
	if pth, _ := choose(p, t, AccOp{Kind: AccReplace}); pth == pathNative {
		var old uint64
		old, err = w.t.Atomic(key, ucx.AtomicCSwap, size, load(compare, size), load(origin, size), true, addr)
		if err == nil {
			store(result, size, old)
		}
	} else {
		err = w.locked(p, func() error { return w.accLocked(p, key, addr, origin, result, compare, t, AccOp{}) })
	}
	if err != nil {
		return winErr(op, pt2pt.ErrOther, "%v", err)
	}
	return nil
}
