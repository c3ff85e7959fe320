package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Win is a window: memory each rank of a communicator exposes to the
// others' one-sided calls (Put, Get, the accumulates). Displacements are
// in units of the target's displacement unit, as in MPI; in dynamic
// windows they are addresses (Address).
type Win struct{ in core.Win }

func coreWin(w *Win) *core.Win { return (*core.Win)(unsafe.Pointer(w)) }
func faceWin(w *core.Win) *Win { return (*Win)(unsafe.Pointer(w)) }

// LockType is a passive-target lock's kind.
type LockType int

// The lock types (MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED).
const (
	LockExclusive = LockType(core.LockExclusive)
	LockShared    = LockType(core.LockShared)
)

// Assertions of the synchronization calls (MPI_MODE_*), or-ed; 0 asserts
// nothing.
const (
	ModeNoCheck   = core.ModeNoCheck
	ModeNoStore   = core.ModeNoStore
	ModeNoPut     = core.ModeNoPut
	ModeNoPrecede = core.ModeNoPrecede
	ModeNoSucceed = core.ModeNoSucceed
)

// The accumulate-only operations (MPI_REPLACE, MPI_NO_OP).
var (
	Replace = Op{core.Replace}
	NoOp    = Op{core.NoOp}
)

// One-sided error classes.
var (
	ErrWin         error = core.ErrWin
	ErrBase        error = core.ErrBase
	ErrLockType    error = core.ErrLockType
	ErrRMAConflict error = core.ErrRMAConflict
	ErrRMASync     error = core.ErrRMASync
	ErrSize        error = core.ErrSize
	ErrDisp        error = core.ErrDisp
	ErrRMARange    error = core.ErrRMARange
	ErrRMAAttach   error = core.ErrRMAAttach
	ErrRMAShared   error = core.ErrRMAShared
	ErrRMAFlavor   error = core.ErrRMAFlavor
)

// WinCreate makes a window over buf (collective over c); dispUnit is the
// displacement unit (typically buf's element size). A device buffer makes
// a window in GPU memory where UCX moves device memory (else ErrBuffer).
func (c *Comm) WinCreate(buf Buffer, dispUnit int) (*Win, error) {
	w, err := coreComm(c).WinCreate(cb(buf), dispUnit)
	return faceWin(w), c.fail(err)
}

// WinAllocate makes a window over n new elements of T on each rank
// (collective) and returns this rank's part; the displacement unit is T's
// size. The memory is freed with the window.
func WinAllocate[T Elem](c *Comm, n int) (*Win, []T, error) {
	w, s, err := core.WinAllocate[T](coreComm(c), n)
	return faceWin(w), s, face(err)
}

// WinAllocateShared makes a window over n new elements of T on each rank
// in one shared-memory segment (collective; all ranks of c on this node,
// else ErrRMAShared) and returns this rank's part; SharedQuery gives
// every rank's part for plain loads and stores.
func WinAllocateShared[T Elem](c *Comm, n int) (*Win, []T, error) {
	w, s, err := core.WinAllocateShared[T](coreComm(c), n)
	return faceWin(w), s, face(err)
}

// SharedQuery returns rank's part of a shared window and its
// displacement unit.
func SharedQuery[T Elem](w *Win, rank int) ([]T, int, error) {
	s, u, err := core.SharedQuery[T](coreWin(w), rank)
	return s, u, face(err)
}

// WinCreateDynamic makes a window without memory (collective); ranks
// Attach memory to it and origins address it by Address.
func (c *Comm) WinCreateDynamic() (*Win, error) {
	w, err := coreComm(c).WinCreateDynamic()
	return faceWin(w), c.fail(err)
}

// Address is buf's address: the displacement of its first element in a
// dynamic window (MPI_Get_address).
func Address(buf Buffer) int { return core.Address(cb(buf)) }

// Attach exposes buf in a dynamic window (local; peers reach it after
// their next synchronization).
func (w *Win) Attach(buf Buffer) error { return face(coreWin(w).Attach(cb(buf))) }

// Detach withdraws buf from a dynamic window.
func (w *Win) Detach(buf Buffer) error { return face(coreWin(w).Detach(cb(buf))) }

// Free ends the window (collective).
func (w *Win) Free() error { return face(coreWin(w).Free()) }

// Size is this rank's window size in bytes.
func (w *Win) Size() int { return coreWin(w).Size() }

// DispUnit is this rank's displacement unit.
func (w *Win) DispUnit() int { return coreWin(w).DispUnit() }

// Put writes buf to target's window at disp. It is complete at the target
// after the epoch's next synchronization, and buf may be reused only then
// (or after FlushLocal). ProcNull does nothing.
func (w *Win) Put(buf Buffer, target, disp int) error {
	return face(coreWin(w).Put(cb(buf), target, disp))
}

// Get reads target's window at disp into buf; the data are in after the
// epoch's next synchronization (FlushLocal included).
func (w *Win) Get(buf Buffer, target, disp int) error {
	return face(coreWin(w).Get(cb(buf), target, disp))
}

// Accumulate combines buf (host memory) into target's window at disp with
// op (a predefined operation or Replace), element-wise atomically with
// respect to other accumulates; it is complete at the target on return.
func (w *Win) Accumulate(buf Buffer, target, disp int, op Op) error {
	return face(coreWin(w).Accumulate(cb(buf), target, disp, op.in))
}

// GetAccumulate is Accumulate that also returns the target's previous
// contents in result (with NoOp, buf is ignored and may be nil).
func (w *Win) GetAccumulate(buf, result Buffer, target, disp int, op Op) error {
	return face(coreWin(w).GetAccumulate(cb(buf), cb(result), target, disp, op.in))
}

// FetchAndOp combines value into the element at target's disp with op and
// returns its previous value.
func FetchAndOp[T Elem](w *Win, value T, target, disp int, op Op) (T, error) {
	v, err := core.FetchAndOp[T](coreWin(w), value, target, disp, op.in)
	return v, face(err)
}

// CompareAndSwap sets the element at target's disp to value if it equals
// compare, and returns its previous value (integer types).
func CompareAndSwap[T Elem](w *Win, value, compare T, target, disp int) (T, error) {
	v, err := core.CompareAndSwap[T](coreWin(w), value, compare, target, disp)
	return v, face(err)
}

// Fence ends the fence epoch (its operations complete everywhere) and
// opens the next unless assert has ModeNoSucceed (collective).
func (w *Win) Fence(assert int) error { return face(coreWin(w).Fence(assert)) }

// Lock starts a passive-target epoch to target.
func (w *Win) Lock(lt LockType, target, assert int) error {
	return face(coreWin(w).Lock(core.LockType(lt), target, assert))
}

// Unlock ends it: every operation to target is complete there.
func (w *Win) Unlock(target int) error { return face(coreWin(w).Unlock(target)) }

// LockAll starts a shared passive-target epoch to every rank.
func (w *Win) LockAll(assert int) error { return face(coreWin(w).LockAll(assert)) }

// UnlockAll ends LockAll's epoch.
func (w *Win) UnlockAll() error { return face(coreWin(w).UnlockAll()) }

// Flush completes every operation to target, at target (in a lock epoch).
func (w *Win) Flush(target int) error { return face(coreWin(w).Flush(target)) }

// FlushAll is Flush for every target.
func (w *Win) FlushAll() error { return face(coreWin(w).FlushAll()) }

// FlushLocal completes every operation to target locally.
func (w *Win) FlushLocal(target int) error { return face(coreWin(w).FlushLocal(target)) }

// FlushLocalAll is FlushLocal for every target.
func (w *Win) FlushLocalAll() error { return face(coreWin(w).FlushLocalAll()) }

// Post opens an exposure epoch to the ranks in group (ranks of the
// window's communicator).
func (w *Win) Post(group []int, assert int) error { return face(coreWin(w).Post(group, assert)) }

// Start opens an access epoch to the ranks in group, once each has posted.
func (w *Win) Start(group []int, assert int) error { return face(coreWin(w).Start(group, assert)) }

// Complete ends Start's access epoch.
func (w *Win) Complete() error { return face(coreWin(w).Complete()) }

// Wait ends Post's exposure epoch once its origins have completed.
func (w *Win) Wait() error { return face(coreWin(w).Wait()) }
