package coll

// Comm is what the collectives need from point-to-point: tagged, ordered,
// nonblocking byte messages on a context private to collectives. Messages
// from one rank to another with the same tag are non-overtaking. Tags used
// by coll lie in [0, 2^23).
type Comm interface {
	Rank() int
	Size() int
	// Isend starts sending buf to rank dest. buf is not modified by coll
	// until the request completes.
	Isend(buf []byte, dest, tag int) (Request, error)
	// Irecv starts receiving into buf from rank src (an explicit rank:
	// collectives never use any-source). A message longer than buf is a
	// truncation error reported by the request.
	Irecv(buf []byte, src, tag int) (Request, error)
}

// Request is a started operation: a point-to-point one from Comm, or a
// collective returned by State.
type Request interface {
	// Test makes progress and reports whether the operation completed, and
	// its error if so. It never blocks. Once it has reported completion it
	// keeps reporting the same result.
	Test() (done bool, err error)
	// Wait blocks until the operation completes and returns its error.
	Wait() error
}

// Counter is implemented by receive requests that know how many bytes
// arrived. When a Comm's receive requests implement it, the executor checks
// every message's size against what the schedule expected, so a peer that
// sent less than the posted buffer (mismatched counts) is an error wrapping
// dtype.ErrCount rather than a silently short result.
type Counter interface {
	// Count is the number of bytes received; valid once the request is done.
	Count() int
}

// The optional interfaces below let a Comm take part in the executor's
// memory and waiting; Comms without them (coll/colltest) behave as before.

// Pinner is implemented by Comms that hand buffers to code the Go runtime
// cannot see (cgo), which requires Go memory to be pinned while a message
// is in flight. The executor pins each buffer of a call (the caller's send
// and receive buffers, the scratch space) at most once, just before the
// first message that needs it, and unpins them all when the call ends; a
// send that a Comm can complete inside the call (TrySend) needs no pin.
// The caller of a State pins nothing.
type Pinner interface {
	// Pin pins buf (non-empty) and returns a token for Unpin.
	Pin(buf []byte) (token any)
	Unpin(token any)
}

// Releaser is implemented by Comm requests that can be recycled: the
// executor calls Release once the request has completed and it holds no
// other reference to it.
type Releaser interface {
	Release()
}

// Idler is implemented by Comms whose transport can put a waiting goroutine
// to sleep. Wait calls Idle when its schedule shares the progress domain
// with others (so it cannot simply block in a request's Wait) and a pass
// over the domain left its current round unfinished; idle counts those
// passes since the schedule last advanced. The Comm applies its transport's
// wait policy: return at once (spin) for small idle, sleep until something
// may have arrived (or a short timeout) beyond.
type Idler interface {
	Idle(idle int)
}
