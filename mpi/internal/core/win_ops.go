package core

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/dtype"
	"github.com/gompix/gompix/osc"
	"github.com/gompix/gompix/pt2pt"
)

// Replace and NoOp are the accumulate-only operations (MPI_REPLACE,
// MPI_NO_OP): the target becomes the origin's value, or stays as it is
// (GetAccumulate and FetchAndOp then only read it). In a collective
// reduction they act as user operations (the later contribution, or the
// earlier one, wins).
var (
	Replace = Op{c: coll.Op{User: replaceOp}, ok: true}
	NoOp    = Op{c: coll.Op{User: noOp}, ok: true}
)

func replaceOp(in, inout []byte, _ dtype.Type) error { copy(inout, in); return nil }
func noOp(in, inout []byte, _ dtype.Type) error      { return nil }

// accOp is op as package osc takes it: predefined operations but Avg,
// Replace and NoOp; user operations are not allowed in accumulates.
func accOp(name string, op Op) (osc.AccOp, error) {
	if err := op.check(name); err != nil {
		return osc.AccOp{}, err
	}
	if op.c.User == nil && op.c.Builtin != dtype.Avg {
		return osc.AccOp{Kind: osc.AccReduce, Op: op.c.Builtin}, nil
	}
	switch reflect.ValueOf(op.c.User).Pointer() {
	case reflect.ValueOf(replaceOp).Pointer():
		return osc.AccOp{Kind: osc.AccReplace}, nil
	case reflect.ValueOf(noOp).Pointer():
		return osc.AccOp{Kind: osc.AccNoOp}, nil
	}
	return osc.AccOp{}, &Error{Op: name, Class: ErrOp, Err: fmt.Errorf("accumulates take predefined operations, Replace and NoOp only")}
}

func origin(b Buffer) osc.Origin {
	m := b.mem()
	return osc.Origin{Ptr: m.Ptr, Len: m.Len, GoMem: m.Kind == pt2pt.Host, Device: m.Kind == pt2pt.Device}
}

// Put writes origin to target's window at displacement disp; it is
// complete at the target after the epoch's next synchronization, and
// origin may be reused only then (or after FlushLocal). A target of
// ProcNull does nothing.
func (w *Win) Put(buf Buffer, target, disp int) error {
	if target == ProcNull {
		return nil
	}
	if err := checkBuf("put", buf); err != nil {
		return err
	}
	return face(w.o().Put(origin(buf), target, disp))
}

// Get reads target's window at disp into buf; the data are in after the
// epoch's next synchronization (FlushLocal included).
func (w *Win) Get(buf Buffer, target, disp int) error {
	if target == ProcNull {
		return nil
	}
	if err := checkBuf("get", buf); err != nil {
		return err
	}
	return face(w.o().Get(origin(buf), target, disp))
}

// accHost is b's host bytes, or an error for device buffers (accumulates
// combine on the host).
func accHost(name string, b Buffer) ([]byte, error) {
	if err := checkBuf(name, b); err != nil {
		return nil, err
	}
	if b.mem().Kind != pt2pt.Host {
		return nil, &Error{Op: name, Class: ErrBuffer, Err: fmt.Errorf("accumulate operands are host buffers (the window may be on a device)")}
	}
	if b.Len() == 0 {
		return []byte{}, nil
	}
	return b.hostBytes(), nil
}

// Accumulate combines buf into target's window at disp with op (a
// predefined operation or Replace), element-wise atomically with respect
// to other accumulates. It is complete when it returns.
func (w *Win) Accumulate(buf Buffer, target, disp int, op Op) error {
	const name = "accumulate"
	a, err := accOp(name, op)
	if err != nil || target == ProcNull {
		return err
	}
	b, err := accHost(name, buf)
	if err != nil {
		return err
	}
	return face(w.o().Accumulate(b, nil, buf.Type().t, a, target, disp))
}

// GetAccumulate is Accumulate that also returns the target's previous
// contents in result (same type and length as buf; with NoOp, buf is
// ignored and may be nil).
func (w *Win) GetAccumulate(buf, result Buffer, target, disp int, op Op) error {
	const name = "get_accumulate"
	a, err := accOp(name, op)
	if err != nil || target == ProcNull {
		return err
	}
	r, err := accHost(name, result)
	if err != nil {
		return err
	}
	var b []byte
	if a.Kind != osc.AccNoOp {
		if b, err = accHost(name, buf); err != nil {
			return err
		}
		if buf.Type() != result.Type() {
			return &Error{Op: name, Class: ErrType, Err: fmt.Errorf("origin of %v, result of %v", buf.Type(), result.Type())}
		}
	}
	return face(w.o().Accumulate(b, r, result.Type().t, a, target, disp))
}

func bytesOf[T Elem](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// FetchAndOp combines value into the element at target's disp with op and
// returns the element's previous value (GetAccumulate of one element).
func FetchAndOp[T Elem](w *Win, value T, target, disp int, op Op) (T, error) {
	var old T
	err := w.GetAccumulate(Slice([]T{value}), Slice(unsafe.Slice(&old, 1)), target, disp, op)
	return old, err
}

// CompareAndSwap sets the element at target's disp to value if it equals
// compare, and returns its previous value (integer types).
func CompareAndSwap[T Elem](w *Win, value, compare T, target, disp int) (T, error) {
	var old T
	if target == ProcNull {
		return old, nil
	}
	err := w.o().CompareAndSwap(bytesOf(&value), bytesOf(&compare), bytesOf(&old), dtypeOf[T](), target, disp)
	return old, face(err)
}

// Fence synchronizes the whole window: it completes every operation of
// the fence epoch it ends and opens the next (unless ModeNoSucceed).
func (w *Win) Fence(assert int) error { return face(w.o().Fence(assert)) }

// Lock starts a passive-target epoch to target (shared or exclusive).
func (w *Win) Lock(lt LockType, target, assert int) error {
	return face(w.o().Lock(lt, target, assert))
}

// Unlock ends it: every operation to target is complete there.
func (w *Win) Unlock(target int) error { return face(w.o().Unlock(target)) }

// LockAll starts a shared passive-target epoch to every rank.
func (w *Win) LockAll(assert int) error { return face(w.o().LockAll(assert)) }

// UnlockAll ends LockAll's epoch.
func (w *Win) UnlockAll() error { return face(w.o().UnlockAll()) }

// Flush completes every operation to target at target, within a
// passive-target epoch.
func (w *Win) Flush(target int) error { return face(w.o().Flush(target)) }

// FlushAll is Flush for every target.
func (w *Win) FlushAll() error { return face(w.o().FlushAll()) }

// FlushLocal completes every operation to target locally: origin buffers
// may be reused and gets' data are in.
func (w *Win) FlushLocal(target int) error { return face(w.o().FlushLocal(target)) }

// FlushLocalAll is FlushLocal for every target.
func (w *Win) FlushLocalAll() error { return face(w.o().FlushLocalAll()) }

// Post opens an exposure epoch to the ranks (of the window's
// communicator) in group.
func (w *Win) Post(group []int, assert int) error { return face(w.o().Post(group, assert)) }

// Start opens an access epoch to the ranks in group, once each has posted.
func (w *Win) Start(group []int, assert int) error { return face(w.o().Start(group, assert)) }

// Complete ends the access epoch Start opened.
func (w *Win) Complete() error { return face(w.o().Complete()) }

// Wait ends the exposure epoch Post opened, once its origins completed.
func (w *Win) Wait() error { return face(w.o().Wait()) }

// o is the window package osc holds (nil for a nil Win, whose calls then
// fail with ErrWin).
func (w *Win) o() *osc.Win {
	if w == nil {
		return nil
	}
	return w.w
}
