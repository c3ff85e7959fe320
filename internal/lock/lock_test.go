package lock

import (
	"sync"
	"testing"
	"time"
)

// Many goroutines increment a counter under the lock: no increment is lost
// (and, under -race, the detector sees the lock order the accesses).
func TestLockExcludes(t *testing.T) {
	var l Lock
	n := 0
	var wg sync.WaitGroup
	const workers, each = 8, 2000
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.Lock()
				n++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != workers*each {
		t.Fatalf("counter %d, want %d", n, workers*each)
	}
}

// A held lock makes TryLock fail and Lock wait until it is released.
func TestLockWaits(t *testing.T) {
	var l Lock
	l.Lock()
	if l.TryLock() {
		t.Fatal("TryLock took a held lock")
	}
	got := make(chan struct{})
	go func() {
		l.Lock()
		close(got)
	}()
	time.Sleep(10 * time.Millisecond) // time enough to take it, were it free
	select {
	case <-got:
		t.Fatal("Lock acquired a held lock")
	default:
	}
	l.Unlock()
	<-got
	l.Unlock()
	if !l.TryLock() {
		t.Fatal("TryLock failed on a free lock")
	}
}

// Unlocking a free lock is a programming error, reported at once.
func TestUnlockFreePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Unlock of a free lock did not panic")
		}
	}()
	var l Lock
	l.Unlock()
}

func BenchmarkLockUnlock(b *testing.B) {
	var l Lock
	for i := 0; i < b.N; i++ {
		l.Lock()
		l.Unlock()
	}
}
