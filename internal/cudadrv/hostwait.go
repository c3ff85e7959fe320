package cudadrv

import "sync"

// Host waits and the driver calls that synchronise the context.
//
// A stream of package stream waits on flags that only this process's host
// writes (an enqueued operation's "go" flag). Some driver calls synchronise
// the whole context: cuIpcCloseMemHandle waits for every stream's work
// (as observed; lazy kernel loading does the same, which
// coll/gpu avoids by looking every kernel up at load time), and other
// driver calls queue behind it. Made while such a wait is outstanding, by
// the goroutine that would release it or by any goroutine whose driver
// calls that one needs, it never returns.
//
// So package stream counts its outstanding waits (BeginHostWait before it
// issues one, EndHostWait once the host has released it), and CloseIPC
// makes its cuIpcCloseMemHandle only while the count is zero, holding the
// lock that BeginHostWait takes, so that no wait can begin under it; other
// such calls go through WhenNoHostWaits. A call asked for meanwhile is
// deferred; the last EndHostWait starts a goroutine that makes the
// deferred calls. A mapping awaiting its unmap is reused by an OpenIPC of
// the same handle (the driver would refuse a second mapping), and then
// not unmapped.
// A stream that always has a wait outstanding holds its closed mappings
// until it has none.

var hostWait struct {
	mu       sync.Mutex // held across a synchronising call; BeginHostWait takes it
	n        int        // outstanding waits
	flushing bool       // a flush goroutine is started
	deferred []func()   // WhenNoHostWaits calls awaiting a time without waits
}

// WhenNoHostWaits runs f, a driver call that may synchronise the context
// and whose result nobody waits for (freeing pinned host memory, say), now
// if no host wait is outstanding, else once none is (on another
// goroutine). No wait can begin while it runs; f must not call this
// file's functions or CloseIPC (it runs under their lock).
func WhenNoHostWaits(f func()) {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	if hostWait.n > 0 {
		hostWait.deferred = append(hostWait.deferred, f)
		return
	}
	f()
}

// BeginHostWait counts a stream wait on a host-written flag that is about
// to be issued. It blocks while a context-synchronising call is in flight.
func BeginHostWait() {
	hostWait.mu.Lock()
	hostWait.n++
	hostWait.mu.Unlock()
}

// EndHostWait uncounts a wait the host has released (or that was never
// issued). It never blocks on a synchronising call: deferred closes run on
// a goroutine of their own.
func EndHostWait() {
	hostWait.mu.Lock()
	hostWait.n--
	if hostWait.n < 0 {
		hostWait.mu.Unlock()
		panic("cudadrv: EndHostWait without BeginHostWait")
	}
	start := hostWait.n == 0 && !hostWait.flushing && len(hostWait.deferred) > 0
	if start {
		hostWait.flushing = true
	}
	hostWait.mu.Unlock()
	if start {
		go flushDeferred()
	}
}

// HostWaits is the number of outstanding host waits (tests, diagnostics).
func HostWaits() int {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	return hostWait.n
}

func flushDeferred() {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	hostWait.flushing = false
	if hostWait.n > 0 {
		return // waits began again; the last of them starts another flush
	}
	flushLocked()
}

// FlushDeferred makes the deferred calls (IPC unmaps among them) now, unless a host
// wait is outstanding, and reports whether none is left. Closing a
// transport calls it, so that what it freed is freed before the driver
// goes; tests call it before they count allocations.
func FlushDeferred() bool {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	if hostWait.n > 0 {
		return false
	}
	flushLocked()
	return true
}

// flushLocked runs the deferred calls. hostWait.mu is held and no wait is
// outstanding.
func flushLocked() {
	fs := hostWait.deferred
	hostWait.deferred = nil
	for _, f := range fs {
		f()
	}
}

// DeferredCalls is the number of WhenNoHostWaits calls awaiting their turn
// (tests, diagnostics).
func DeferredCalls() int {
	hostWait.mu.Lock()
	defer hostWait.mu.Unlock()
	return len(hostWait.deferred)
}
