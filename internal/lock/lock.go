// Package lock is a mutual-exclusion lock for short critical sections that
// are rarely contended, whose release costs no atomic read-modify-write.
//
// sync.Mutex releases with a locked add (it must see whether a waiter needs
// waking). On x86 a locked instruction first waits until every store the
// processor has buffered is visible to the other cores; right after a
// message has been sent or received through shared memory, those include
// stores to cache lines the peer process holds, so the release waits for a
// cross-core transfer. A package mpi collective locks its communicator
// around each call and releases just after the call's last receive, so a
// plain-store release takes that wait off every small collective.
//
// Lock acquires with a compare-and-swap; a contended Lock polls, yielding to
// other goroutines, then sleeping briefly between attempts (there is no
// queue and no wake-up). Under the race detector, and on other
// architectures, the release is an atomic store.
//
// Layer: a leaf (standard library only).
package lock

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Lock is a mutual-exclusion lock; the zero Lock is unlocked. It must not
// be copied after first use.
type Lock struct {
	v uint32
}

// spinTries is how many times a contended Lock yields to other goroutines
// before it sleeps between attempts.
const spinTries = 100

// sleep is the pause between attempts after spinTries.
const sleep = 20 * time.Microsecond

// Lock acquires l, waiting while another holder has it.
func (l *Lock) Lock() {
	if atomic.CompareAndSwapUint32(&l.v, 0, 1) {
		return
	}
	l.lockSlow()
}

func (l *Lock) lockSlow() {
	for i := 0; ; i++ {
		if atomic.LoadUint32(&l.v) == 0 && atomic.CompareAndSwapUint32(&l.v, 0, 1) {
			return
		}
		if i < spinTries {
			runtime.Gosched()
		} else {
			time.Sleep(sleep)
		}
	}
}

// TryLock acquires l if it is free and reports whether it did.
func (l *Lock) TryLock() bool { return atomic.CompareAndSwapUint32(&l.v, 0, 1) }

// Unlock releases l, which must be held (by any goroutine).
func (l *Lock) Unlock() {
	if atomic.LoadUint32(&l.v) == 0 {
		panic("lock: Unlock of an unlocked Lock")
	}
	release(&l.v)
}
