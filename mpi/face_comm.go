package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Comm is a communicator: an ordered group of ranks with a private
// matching context.
type Comm struct{ in core.Comm }

// Rank is the calling process's rank in c; Undefined for a nil communicator
// and World() before Init. It stays readable after Finalize.
func (c *Comm) Rank() int {
	return coreComm(c).Rank()
}

// Size is the number of ranks in c; 0 for a nil communicator and World()
// before Init.
func (c *Comm) Size() int {
	return coreComm(c).Size()
}

// Status describes a received or probed message.
type Status struct {
	Source int
	Tag    int
	// Count is the number of elements received (of the receive buffer's
	// type); for a truncated receive, the number the message held;
	// Undefined when the message is not a whole number of elements.
	Count int
	// Bytes is the message size in bytes.
	Bytes     int
	Cancelled bool
}

// CountOf returns the number of elements of type T the message holds (for
// statuses from Probe, which know no buffer type), or Undefined when it is
// not a whole number of them.
func CountOf[T Elem](s Status) int {
	return core.CountOf[T](core.Status(s))
}

// Request is a nonblocking operation in flight.
type Request struct{ in core.Request }

// Wait blocks until the operation completes and returns its status.
func (r *Request) Wait() (Status, error) {
	var s Status
	var err error
	*coreStatus(&s), err = coreRequest(r).Wait()
	return s, face(err)
}

// Test reports whether the operation has completed, making progress.
func (r *Request) Test() (bool, Status, error) {
	var (
		done bool
		s    Status
		err  error
	)
	done, *coreStatus(&s), err = coreRequest(r).Test()
	return done, s, face(err)
}

// Cancel asks for a pending receive to be cancelled; Wait then reports
// Status.Cancelled. Sends cannot be cancelled (they complete normally).
func (r *Request) Cancel() {
	coreRequest(r).Cancel()
}

// Free releases the request without waiting (MPI_Request_free). The
// operation completes in the background; a receive buffer stays pinned
// until then.
func (r *Request) Free() {
	coreRequest(r).Free()
}

// Waitall waits for every request and returns their statuses and the first
// error. Every request is completed even if one fails.
func Waitall(rs ...*Request) ([]Status, error) {
	r0, r1 := core.Waitall(reqs(rs)...)
	return statuses(r0), face(r1)
}

// Testall reports whether every request has completed; once they have, it
// returns their statuses and the first error.
func Testall(rs ...*Request) (bool, []Status, error) {
	r0, r1, r2 := core.Testall(reqs(rs)...)
	return r0, statuses(r1), face(r2)
}

// Waitany waits until one active request completes and returns its index,
// or -1 when no request is active (MPI_UNDEFINED).
func Waitany(rs ...*Request) (int, Status, error) {
	r0, r1, r2 := core.Waitany(reqs(rs)...)
	return r0, Status(r1), face(r2)
}

// Send sends buf to rank dest with tag (blocking, standard mode).
func (c *Comm) Send(buf Buffer, dest, tag int) error {
	return c.fail(coreComm(c).Send(cb(buf), dest, tag))
}

// Ssend sends in synchronous mode: it returns once the receiver has
// matched the message.
func (c *Comm) Ssend(buf Buffer, dest, tag int) error {
	return c.fail(coreComm(c).Ssend(cb(buf), dest, tag))
}

// Recv receives into buf from src (or AnySource) with tag (or AnyTag). A
// message larger than buf fails with ErrTruncate; the status then gives the
// message's real size.
func (c *Comm) Recv(buf Buffer, src, tag int) (s Status, err error) {
	err = coreComm(c).RecvInto(coreStatus(&s), cb(buf), src, tag)
	return s, c.fail(err)
}

// Isend starts a standard-mode send.
func (c *Comm) Isend(buf Buffer, dest, tag int) (*Request, error) {
	r0, r1 := coreComm(c).Isend(cb(buf), dest, tag)
	return faceRequest(r0), c.fail(r1)
}

// Issend starts a synchronous-mode send.
func (c *Comm) Issend(buf Buffer, dest, tag int) (*Request, error) {
	r0, r1 := coreComm(c).Issend(cb(buf), dest, tag)
	return faceRequest(r0), c.fail(r1)
}

// Irecv starts a receive.
func (c *Comm) Irecv(buf Buffer, src, tag int) (*Request, error) {
	r0, r1 := coreComm(c).Irecv(cb(buf), src, tag)
	return faceRequest(r0), c.fail(r1)
}

// Sendrecv sends sendbuf to dest and receives into recvbuf from src, both
// at once, so that exchanges in a ring cannot deadlock.
//
// A short message that leaves inside one transport call (pt2pt's
// Immediate, as Send uses) is sent first, once the receive's arguments are
// known to be good: having left, it cannot take part in a deadlock, and the
// receive then takes Recv's path (an in-call poll, no pin when the message
// comes in time), the way a barrier's exchange works.
func (c *Comm) Sendrecv(sendbuf Buffer, dest, sendtag int, recvbuf Buffer, src, recvtag int) (Status, error) {
	var s Status
	var err error
	*coreStatus(&s), err = coreComm(c).Sendrecv(cb(sendbuf), dest, sendtag, cb(recvbuf), src, recvtag)
	return s, c.fail(err)
}

// Probe blocks until a message from src with tag can be received and
// describes it (use CountOf to size the buffer).
func (c *Comm) Probe(src, tag int) (Status, error) {
	r0, r1 := coreComm(c).Probe(src, tag)
	return Status(r0), c.fail(r1)
}

// Iprobe is the nonblocking Probe.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	r0, r1, r2 := coreComm(c).Iprobe(src, tag)
	return Status(r0), r1, c.fail(r2)
}
