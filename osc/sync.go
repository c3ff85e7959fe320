package osc

import (
	"runtime"
	"time"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/pt2pt/ucx"
)

// LockType is a passive-target lock's kind.
type LockType int

// The lock types (MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED).
const (
	LockExclusive LockType = iota + 1
	LockShared
)

// Assertions (MPI_MODE_*): hints a synchronization call may use.
const (
	ModeNoCheck   = 1 << iota // the lock or post needs no check: nobody conflicts
	ModeNoStore               // (fence, post) no local store since the last sync
	ModeNoPut                 // (fence, post) no put or accumulate to here until the next
	ModeNoPrecede             // (fence) no operation of this rank completes here
	ModeNoSucceed             // (fence) no operation follows: the fence ends the epochs
)

// Tags of the PSCW messages on the window's group.
const (
	tagPost     = 1
	tagComplete = 2
)

// epoch is a rank's synchronization state on a window.
type epoch struct {
	fence      bool             // in a fence epoch (a fence not asserting ModeNoSucceed)
	locks      map[int]LockType // passive-target locks held, by target
	lockAll    bool
	noCheck    map[int]bool // locks taken with ModeNoCheck (nothing to release)
	allNoCheck bool         // LockAll took ModeNoCheck
	access     []int        // PSCW access group (Start), or nil
	exposure   []int        // PSCW exposure group (Post), or nil
}

func (e *epoch) locked() bool { return len(e.locks) > 0 || e.lockAll }

// canAccess says whether target may be accessed now.
func (e *epoch) canAccess(target int) bool {
	if e.fence || e.lockAll {
		return true
	}
	if _, ok := e.locks[target]; ok {
		return true
	}
	for _, r := range e.access {
		if r == target {
			return true
		}
	}
	return false
}

// checkOpen fails once the window is freed; w.mu held.
func (w *Win) checkOpen(op string) error {
	if w.freed {
		return winErr(op, pt2pt.ErrWin, "window has been freed")
	}
	return nil
}

func (w *Win) checkTarget(op string, target int) error {
	if target < 0 || target >= len(w.peers) {
		return winErr(op, pt2pt.ErrRank, "target %d of %d", target, len(w.peers))
	}
	return nil
}

// Fence ends the current fence epoch (completing every operation of it at
// every rank) and, unless assert has ModeNoSucceed, opens the next.
func (w *Win) Fence(assert int) error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	if err := w.checkOpen("win fence"); err != nil {
		w.mu.Unlock()
		return err
	}
	if w.ep.locked() || w.ep.access != nil || w.ep.exposure != nil {
		w.mu.Unlock()
		return winErr("win fence", pt2pt.ErrRMASync, "a lock or post-start-complete-wait epoch is open")
	}
	err := w.flushAllLocked()
	w.ep.fence = assert&ModeNoSucceed == 0
	w.invalidateDyn()
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if assert&ModeNoPrecede != 0 && assert&ModeNoSucceed != 0 {
		return nil // nothing before or after: no rank waits on this one
	}
	return w.g.Barrier()
}

// Lock starts a passive-target epoch to target.
func (w *Win) Lock(lt LockType, target, assert int) error {
	if w == nil {
		return errNilWin
	}
	const op = "win lock"
	if lt != LockExclusive && lt != LockShared {
		return winErr(op, pt2pt.ErrLockType, "lock type %d", lt)
	}
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil {
		err = w.checkTarget(op, target)
	}
	if err == nil && (w.ep.lockAll || w.ep.locks[target] != 0) {
		err = winErr(op, pt2pt.ErrRMASync, "target %d is already locked", target)
	}
	if err == nil && w.ep.fence {
		err = winErr(op, pt2pt.ErrRMASync, "inside a fence epoch")
	}
	if err != nil {
		w.mu.Unlock()
		return err
	}
	if w.ep.locks == nil {
		w.ep.locks, w.ep.noCheck = map[int]LockType{}, map[int]bool{}
	}
	w.ep.locks[target] = lt
	w.ep.noCheck[target] = assert&ModeNoCheck != 0
	w.invalidateDyn()
	w.mu.Unlock()
	if assert&ModeNoCheck != 0 {
		return nil
	}
	if err := w.acquire(target, lt); err != nil {
		w.mu.Lock()
		delete(w.ep.locks, target)
		w.mu.Unlock()
		return err
	}
	return nil
}

// acquire takes target's lock word: exclusive by compare-and-swap from
// free, shared by adding a holder and backing out while an exclusive
// holder is there.
func (w *Win) acquire(target int, lt LockType) error {
	p := &w.peers[target]
	for try := 0; ; try++ {
		if lt == LockExclusive {
			old, err := w.t.Atomic(p.ctrlKey, ucx.AtomicCSwap, 8, 0, lockExcl, true, p.ctrl+ctrlLock)
			if err != nil || old == 0 {
				return err
			}
		} else {
			old, err := w.t.Atomic(p.ctrlKey, ucx.AtomicAdd, 8, 1, 0, true, p.ctrl+ctrlLock)
			if err != nil || old&lockExcl == 0 {
				return err
			}
			if _, err := w.t.Atomic(p.ctrlKey, ucx.AtomicAdd, 8, ^uint64(0), 0, false, p.ctrl+ctrlLock); err != nil {
				return err
			}
		}
		w.backoff(try)
	}
}

// backoff waits before another try at a lock word: a few yields, then
// sleeps growing to 100 µs, so that contending ranks let the holder (and
// the target's progress) run. It progresses this rank's worker first: a
// rank spinning on a lock word of its own window gets its answers from
// the self transport at once, without progress, while the holder's
// operations on this rank's memory may be waiting for it.
func (w *Win) backoff(try int) {
	w.t.Progress()
	if try < 8 {
		runtime.Gosched()
		return
	}
	d := time.Duration(try) * time.Microsecond
	if d > 100*time.Microsecond {
		d = 100 * time.Microsecond
	}
	time.Sleep(d)
}

// Unlock ends the passive-target epoch to target: every operation to it
// is complete there, then the lock is released.
func (w *Win) Unlock(target int) error {
	if w == nil {
		return errNilWin
	}
	const op = "win unlock"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil {
		err = w.checkTarget(op, target)
	}
	lt := w.ep.locks[target]
	if err == nil && lt == 0 {
		err = winErr(op, pt2pt.ErrRMASync, "target %d is not locked", target)
	}
	if err != nil {
		w.mu.Unlock()
		return err
	}
	err = w.flushLocked(target)
	noCheck := w.ep.noCheck[target]
	delete(w.ep.locks, target)
	delete(w.ep.noCheck, target)
	w.mu.Unlock()
	if noCheck {
		return err
	}
	if rerr := w.releaseLock(target, lt); err == nil {
		err = rerr
	}
	return err
}

func (w *Win) releaseLock(target int, lt LockType) error {
	p := &w.peers[target]
	dec := ^uint64(0) // -1: one shared holder fewer
	if lt == LockExclusive {
		dec = ^lockExcl + 1 // two's complement: adding it subtracts lockExcl
	}
	_, err := w.t.Atomic(p.ctrlKey, ucx.AtomicAdd, 8, dec, 0, false, p.ctrl+ctrlLock)
	if err == nil {
		err = w.t.Flush(p.world)
	}
	return err
}

// LockAll starts a shared passive-target epoch to every rank.
func (w *Win) LockAll(assert int) error {
	if w == nil {
		return errNilWin
	}
	const op = "win lock_all"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && (w.ep.locked() || w.ep.fence) {
		err = winErr(op, pt2pt.ErrRMASync, "a lock or fence epoch is open")
	}
	if err != nil {
		w.mu.Unlock()
		return err
	}
	w.ep.lockAll = true
	w.ep.allNoCheck = assert&ModeNoCheck != 0
	w.invalidateDyn()
	w.mu.Unlock()
	if assert&ModeNoCheck != 0 {
		return nil
	}
	for r := range w.peers {
		if err := w.acquire(r, LockShared); err != nil {
			for q := 0; q < r; q++ {
				_ = w.releaseLock(q, LockShared)
			}
			w.mu.Lock()
			w.ep.lockAll = false
			w.mu.Unlock()
			return err
		}
	}
	return nil
}

// UnlockAll ends LockAll's epoch.
func (w *Win) UnlockAll() error {
	if w == nil {
		return errNilWin
	}
	const op = "win unlock_all"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && !w.ep.lockAll {
		err = winErr(op, pt2pt.ErrRMASync, "no LockAll epoch is open")
	}
	if err != nil {
		w.mu.Unlock()
		return err
	}
	err = w.flushAllLocked()
	noCheck := w.ep.allNoCheck
	w.ep.lockAll, w.ep.allNoCheck = false, false
	w.mu.Unlock()
	if noCheck {
		return err
	}
	for r := range w.peers {
		if rerr := w.releaseLock(r, LockShared); err == nil {
			err = rerr
		}
	}
	return err
}

// passive checks that target is in a passive-target epoch (Flush's
// precondition).
func (w *Win) passive(op string, target int) error {
	if err := w.checkOpen(op); err != nil {
		return err
	}
	if target >= 0 {
		if err := w.checkTarget(op, target); err != nil {
			return err
		}
	}
	if w.ep.lockAll || (target >= 0 && w.ep.locks[target] != 0) || (target < 0 && w.ep.locked()) {
		return nil
	}
	return winErr(op, pt2pt.ErrRMASync, "no passive-target epoch to %d", target)
}

// Flush completes every operation to target, at target.
func (w *Win) Flush(target int) error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.passive("win flush", target); err != nil {
		return err
	}
	return w.flushLocked(target)
}

// FlushAll completes every operation, at its target.
func (w *Win) FlushAll() error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.passive("win flush_all", -1); err != nil {
		return err
	}
	return w.flushAllLocked()
}

// FlushLocal completes every operation to target at this rank: origin
// buffers may be reused, gets' data are in.
func (w *Win) FlushLocal(target int) error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.passive("win flush_local", target); err != nil {
		return err
	}
	return w.localLocked(target)
}

// FlushLocalAll is FlushLocal for every target.
func (w *Win) FlushLocalAll() error {
	if w == nil {
		return errNilWin
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.passive("win flush_local_all", -1); err != nil {
		return err
	}
	var err error
	for target := range w.pending {
		if lerr := w.localLocked(target); err == nil {
			err = lerr
		}
	}
	return err
}

// localLocked waits for target's pending operations; w.mu held.
func (w *Win) localLocked(target int) error {
	var err error
	for _, o := range w.pending[target] {
		if werr := o.Wait(); err == nil {
			err = werr
		}
	}
	w.settle(target)
	return err
}

// flushLocked completes target's operations at target; w.mu held.
func (w *Win) flushLocked(target int) error {
	err := w.t.Flush(w.peers[target].world)
	w.t.ReleaseOps(w.pending[target])
	w.settle(target)
	return err
}

// flushAllLocked completes every operation at its target; w.mu held.
func (w *Win) flushAllLocked() error {
	err := w.t.FlushAll()
	for target, ops := range w.pending {
		w.t.ReleaseOps(ops)
		w.settle(target)
	}
	return err
}

// settle forgets target's completed operations and unpins their buffers.
func (w *Win) settle(target int) {
	delete(w.pending, target)
	if p := w.pins[target]; p != nil {
		p.Unpin()
	}
}

// Post opens an exposure epoch to the ranks of group (PSCW).
func (w *Win) Post(group []int, assert int) error {
	if w == nil {
		return errNilWin
	}
	const op = "win post"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && w.ep.exposure != nil {
		err = winErr(op, pt2pt.ErrRMASync, "an exposure epoch is already open")
	}
	for _, r := range group {
		if err == nil {
			err = w.checkTarget(op, r)
		}
	}
	if err == nil {
		w.ep.exposure = append([]int{}, group...)
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var one [1]byte
	for _, r := range group {
		if err := w.g.Send(one[:], r, tagPost); err != nil {
			return err
		}
	}
	return nil
}

// Start opens an access epoch to the ranks of group, once each has posted.
func (w *Win) Start(group []int, assert int) error {
	if w == nil {
		return errNilWin
	}
	const op = "win start"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && (w.ep.access != nil || w.ep.fence) {
		err = winErr(op, pt2pt.ErrRMASync, "an access epoch is already open")
	}
	for _, r := range group {
		if err == nil {
			err = w.checkTarget(op, r)
		}
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var one [1]byte
	for _, r := range group {
		if err := w.g.Recv(one[:], r, tagPost); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.ep.access = append([]int{}, group...)
	w.invalidateDyn()
	w.mu.Unlock()
	return nil
}

// Complete ends the access epoch: its operations are complete at their
// targets, and each target is told.
func (w *Win) Complete() error {
	if w == nil {
		return errNilWin
	}
	const op = "win complete"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && w.ep.access == nil {
		err = winErr(op, pt2pt.ErrRMASync, "no access epoch (Start) is open")
	}
	group := w.ep.access
	for _, r := range group {
		if err == nil {
			err = w.flushLocked(r)
		}
	}
	w.ep.access = nil
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var one [1]byte
	for _, r := range group {
		if err := w.g.Send(one[:], r, tagComplete); err != nil {
			return err
		}
	}
	return nil
}

// Wait ends the exposure epoch once every origin of its group has
// completed.
func (w *Win) Wait() error {
	if w == nil {
		return errNilWin
	}
	const op = "win wait"
	w.mu.Lock()
	err := w.checkOpen(op)
	if err == nil && w.ep.exposure == nil {
		err = winErr(op, pt2pt.ErrRMASync, "no exposure epoch (Post) is open")
	}
	group := w.ep.exposure
	w.mu.Unlock()
	if err != nil {
		return err
	}
	var one [1]byte
	for _, r := range group {
		if err := w.g.Recv(one[:], r, tagComplete); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.ep.exposure = nil
	w.mu.Unlock()
	return nil
}
