package core

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/gompix/gompix/internal/lock"
	"github.com/gompix/gompix/internal/spin"
	"github.com/gompix/gompix/pt2pt"
)

// Comm is a communicator: an ordered group of ranks with a private
// matching context.
type Comm struct {
	pc *pt2pt.Comm
	// collMu serialises collective calls on this communicator (MPI makes
	// concurrent ones erroneous; gompix orders them instead of corrupting
	// the collective sequence). A lock.Lock: its release, right after a
	// call's last message, is a plain store (package lock says why).
	collMu lock.Lock
	coll   collState
	hier   hierState // two-level collectives (hier.go)
	// nodeID is the index of this process's node (for SplitType).
	nodeID int

	// hostColls counts the enqueued collectives (StreamComm) that took the
	// stream engine's path (started when the stream gets there) and have
	// not started yet.
	hostColls atomic.Int64

	// life is shared by a world and every communicator made from it;
	// Finalize ends it, so that each operation's check is one load.
	life *lifetime
	// life tracks the nonblocking collectives in flight, so that Free
	// leaves their resources to the last one (collective.go).
	pending commLife
	// x holds what few communicators have: a topology, attributes, info
	// hints, an error handler (commext.go); nil until one is set.
	x atomic.Pointer[commExt]
}

// lifetime is the span between a world's creation and Finalize.
type lifetime struct{ ended atomic.Bool }

func newComm(pc *pt2pt.Comm) *Comm { return &Comm{pc: pc, life: new(lifetime)} }

// derive wraps a communicator created from c, which inherits c's error
// handler (as MPI has every new communicator do).
func (c *Comm) derive(pc *pt2pt.Comm) *Comm {
	nc := &Comm{pc: pc, nodeID: c.nodeID, life: c.life}
	if c.ErrorHandler() == ErrorsAreFatal {
		nc.ext().fatal = true
	}
	return nc
}

// end makes every later operation on c, the communicators made from it and
// their requests fail with ErrNotInitialized (Finalize).
func (c *Comm) end() { c.life.ended.Store(true) }

// noWorld is World() before Init: a communicator of no ranks whose
// operations fail with ErrNotInitialized.
var noWorld = func() *Comm {
	c := &Comm{life: new(lifetime)}
	c.end()
	return c
}()

func (c *Comm) node() int { return c.nodeID }

// Rank is the calling process's rank in c; Undefined for a nil communicator
// and World() before Init. It stays readable after Finalize.
func (c *Comm) Rank() int {
	if c == nil || c.pc == nil {
		return Undefined
	}
	return c.pc.Rank()
}

// Size is the number of ranks in c; 0 for a nil communicator and World()
// before Init.
func (c *Comm) Size() int {
	if c == nil || c.pc == nil {
		return 0
	}
	return c.pc.Size()
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

// set fills s from st, in place: a Status has too many fields for the
// compiler to keep in registers, and one built in a temporary and then
// copied into a result is read back with wider loads than the stores that
// wrote it, a store-forwarding stall on every blocking receive's path.
func (s *Status) set(st pt2pt.Status, elemSize int) {
	s.Source, s.Tag, s.Bytes, s.Cancelled = st.Source, st.Tag, st.Bytes, st.Cancelled
	s.Count = 0
	if elemSize > 0 {
		s.Count = st.Bytes >> bits.TrailingZeros(uint(elemSize))
		if st.Bytes&(elemSize-1) != 0 {
			s.Count = Undefined // not a whole number of elements
		}
	}
}

func toStatus(st pt2pt.Status, elemSize int) Status {
	var s Status
	s.set(st, elemSize)
	return s
}

// CountOf returns the number of elements of type T the message holds (for
// statuses from Probe, which know no buffer type), or Undefined when it is
// not a whole number of them.
func CountOf[T Elem](s Status) int {
	size := dtypeOf[T]().Size()
	if s.Bytes%size != 0 {
		return Undefined
	}
	return s.Bytes / size
}

// Request is a nonblocking operation in flight.
type Request struct {
	r        pt2pt.Request // the transport operation, when p2p is set
	p2p      bool
	pinner   *runtime.Pinner // nil once released (pin.go)
	elemSize int
	done     bool
	status   Status
	err      error
	// sched is set for nonblocking collectives (see collective.go).
	sched collRequest
	// life is the communicator's (nil for a request of none).
	life *lifetime
	// view is set for a receive into a View, unpacked on completion.
	view *viewRecv
	// pers is set for persistent requests (persistent.go).
	pers *persistent
}

// ended reports the error of a request waited for or tested after Finalize
// (nil before).
func (r *Request) ended(op string) error {
	if r.life != nil && r.life.ended.Load() {
		return &Error{Op: op, Class: ErrNotInitialized}
	}
	return nil
}

func (r *Request) complete(st pt2pt.Status, err error) (Status, error) {
	r.done = true
	unpin(r.pinner)
	r.pinner = nil
	r.status = toStatus(st, r.elemSize)
	r.err = face(err)
	if r.view != nil {
		r.view.finish(&r.status, err)
	}
	return r.status, r.err
}

// Wait blocks until the operation completes and returns its status.
func (r *Request) Wait() (Status, error) {
	if traceOn {
		defer begin("MPI_Wait", "request").end()
	}
	if r == nil {
		return Status{}, &Error{Op: "wait", Class: ErrRequest}
	}
	if r.done {
		return r.status, r.err
	}
	if err := r.ended("wait"); err != nil {
		return Status{}, err
	}
	if r.sched != nil {
		return r.complete(pt2pt.Status{}, r.sched.Wait())
	}
	st, err := r.r.Wait()
	return r.complete(st, err)
}

// Test reports whether the operation has completed, making progress.
func (r *Request) Test() (bool, Status, error) {
	if traceOn {
		defer begin("MPI_Test", "request").end()
	}
	if r == nil {
		return false, Status{}, &Error{Op: "test", Class: ErrRequest}
	}
	if r.done {
		return true, r.status, r.err
	}
	if err := r.ended("test"); err != nil {
		return false, Status{}, err
	}
	if r.sched != nil {
		ok, err := r.sched.Test()
		if !ok {
			return false, Status{}, nil
		}
		st, err := r.complete(pt2pt.Status{}, err)
		return true, st, err
	}
	ok, st, err := r.r.Test()
	if !ok {
		return false, Status{}, nil
	}
	s, err := r.complete(st, err)
	return true, s, err
}

// Cancel asks for a pending receive to be cancelled; Wait then reports
// Status.Cancelled. Sends cannot be cancelled (they complete normally).
func (r *Request) Cancel() {
	if r != nil && !r.done && r.p2p && r.ended("cancel") == nil {
		r.r.Cancel()
	}
}

// Free releases the request without waiting (MPI_Request_free). The
// operation completes in the background; a receive buffer stays pinned
// until then.
func (r *Request) Free() {
	if r != nil && r.pers != nil {
		r.freePersistent()
		return
	}
	if r != nil && !r.done && r.p2p {
		r.done = true
		if r.ended("free") != nil {
			// The transport is closed and touches the buffer no more.
			unpin(r.pinner)
			r.pinner = nil
			return
		}
		parkFreed(r)
	}
}

// Waitall waits for every request and returns their statuses and the first
// error. Every request is completed even if one fails.
func Waitall(rs ...*Request) ([]Status, error) {
	if traceOn {
		defer begin("MPI_Waitall", "request").end()
	}
	sts := make([]Status, len(rs))
	var first error
	for i, r := range rs {
		if r == nil {
			continue
		}
		st, err := r.Wait()
		sts[i] = st
		if err != nil && first == nil {
			first = err
		}
	}
	return sts, first
}

// Testall reports whether every request has completed; once they have, it
// returns their statuses and the first error.
func Testall(rs ...*Request) (bool, []Status, error) {
	if traceOn {
		defer begin("MPI_Testall", "request").end()
	}
	all := true
	for _, r := range rs {
		if r == nil {
			continue
		}
		if ok, _, _ := r.Test(); !ok {
			all = false
		}
	}
	if !all {
		return false, nil, nil
	}
	sts, err := Waitall(rs...)
	return true, sts, err
}

// Waitany waits until one active request completes and returns its index,
// or -1 when no request is active (MPI_UNDEFINED).
func Waitany(rs ...*Request) (int, Status, error) {
	if traceOn {
		defer begin("MPI_Waitany", "request").end()
	}
	prs := make([]*pt2pt.Request, len(rs))
	active := false
	for i, r := range rs {
		if r != nil && !r.done {
			active = true
			if err := r.ended("waitany"); err != nil {
				return i, Status{}, err
			}
			if r.sched != nil {
				// Collectives have no transport request to wait on;
				// fall back to polling everything.
				return waitanyPoll(rs)
			}
			prs[i] = &r.r
		}
	}
	if !active {
		return -1, Status{}, nil
	}
	i, st, err := pt2pt.WaitAny(prs)
	if i < 0 {
		// Every active request's transport part is done already (ProcNull
		// completes at once): any of them is the answer.
		for i, r := range rs {
			if r != nil && !r.done {
				s, err := r.Wait()
				return i, s, err
			}
		}
	}
	s, err := rs[i].complete(st, err)
	return i, s, err
}

func waitanyPoll(rs []*Request) (int, Status, error) {
	var yield spin.Yielder
	for {
		for i, r := range rs {
			if r == nil || r.done {
				continue
			}
			if ok, st, err := r.Test(); ok {
				return i, st, err
			}
		}
		yield.Yield()
	}
}

// check reports the error every operation on c fails with first: a nil
// communicator, or one used before Init or after Finalize.
func (c *Comm) check(op string) error {
	if c == nil || c.pc == nil || c.life.ended.Load() {
		return c.badComm(op)
	}
	return nil
}

func (c *Comm) badComm(op string) error {
	if c != nil && c.life != nil && c.life.ended.Load() {
		return &Error{Op: op, Class: ErrNotInitialized}
	}
	return &Error{Op: op, Class: ErrComm, Err: fmt.Errorf("nil communicator")}
}

// checkBuf refuses a missing buffer and InPlace where a call has memory of
// its own to send or receive.
func checkBuf(op string, b Buffer) error {
	if b == nil {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("nil buffer")}
	}
	if _, ok := b.(inPlace); ok {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("mpi.InPlace is not a buffer here")}
	}
	return nil
}

// post checks c and b, pins b (unless the transport says a receive into
// it needs no pin) and starts the transport operation m describes on b's
// memory.
func (c *Comm) post(op string, b Buffer, m pt2pt.Msg) (*Request, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	if err := checkBuf(op, b); err != nil {
		return nil, err
	}
	req := &Request{elemSize: b.Type().Size(), p2p: true, life: c.life}
	return c.postIn(req, b, m)
}

// postIn is post into req, checked already.
func (c *Comm) postIn(req *Request, b Buffer, m pt2pt.Msg) (*Request, error) {
	if anyFreed.Load() {
		sweepFreed()
	}
	m.Mem = b.mem()
	if m.Flags&pt2pt.Receive == 0 || !c.pc.RecvPinFree(m.Mem) {
		req.pinner = pinBuffers(b)
	}
	if err := c.pc.Post(m, &req.r); err != nil {
		req.complete(pt2pt.Status{}, nil)
		return nil, face(err)
	}
	return req, nil
}

func (c *Comm) isend(op string, b Buffer, dest, tag int, sync bool) (*Request, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	b = sendBuf(b)
	if err := checkBuf(op, b); err != nil {
		return nil, err
	}
	req := &Request{elemSize: b.Type().Size(), p2p: true, life: c.life}
	m := pt2pt.Msg{Peer: dest, Tag: tag, Flags: pt2pt.Sync}
	if !sync {
		// A short message goes out from a copy inside one transport call,
		// as Send's does: no pin, and usually a request complete at once.
		// Even when the message has left, the request stays active until
		// the application waits for it (Waitany and Testany count it).
		m.Mem, m.Flags = b.mem(), pt2pt.Immediate
		if err := c.pc.Post(m, &req.r); err != nil {
			return nil, face(err)
		}
		if req.r.Posted() {
			return req, nil
		}
		m.Flags = 0
	}
	return c.postIn(req, b, m)
}

func (c *Comm) irecv(op string, b Buffer, src, tag int) (*Request, error) {
	if v, ok := b.(*View); ok {
		return c.irecvView(op, v, src, tag)
	}
	return c.post(op, b, pt2pt.Msg{Peer: src, Tag: tag, Flags: pt2pt.Receive})
}

// Send sends buf to rank dest with tag (blocking, standard mode).
func (c *Comm) Send(buf Buffer, dest, tag int) error {
	if traceOn {
		defer c.p2pSpan("MPI_Send", buf, dest).end()
	}
	if err := c.check("send"); err != nil {
		return err
	}
	if err := checkBuf("send", buf); err != nil {
		return err
	}
	buf = sendBuf(buf)
	// A short message goes out inside one transport call that keeps no
	// reference to the buffer, so it needs no pin (pinning costs more than
	// such a message's whole send).
	m := pt2pt.Msg{Mem: buf.mem(), Peer: dest, Tag: tag, Flags: pt2pt.Immediate}
	if _, sent, err := c.pc.Run(m); sent || err != nil {
		return face(err)
	}
	p := pinBuffers(buf)
	m.Flags = 0
	_, _, err := c.pc.Run(m)
	unpin(p)
	return face(err)
}

// Ssend sends in synchronous mode: it returns once the receiver has
// matched the message.
func (c *Comm) Ssend(buf Buffer, dest, tag int) error {
	if traceOn {
		defer c.p2pSpan("MPI_Ssend", buf, dest).end()
	}
	r, err := c.isend("ssend", buf, dest, tag, true)
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

// Recv receives into buf from src (or AnySource) with tag (or AnyTag). A
// message larger than buf fails with ErrTruncate; the status then gives the
// message's real size.
func (c *Comm) Recv(buf Buffer, src, tag int) (s Status, err error) {
	err = c.RecvInto(&s, buf, src, tag)
	return s, err
}

// RecvInto is Recv with the status filled in *s, in place (package mpi's
// Recv hands it its own result: setStatus says why).
func (c *Comm) RecvInto(s *Status, buf Buffer, src, tag int) error {
	if traceOn {
		defer c.p2pSpan("MPI_Recv", buf, src).end()
	}
	if err := c.check("recv"); err != nil {
		*s = Status{}
		return err
	}
	if err := checkBuf("recv", buf); err != nil {
		*s = Status{}
		return err
	}
	if v, ok := buf.(*View); ok {
		return c.recvView(s, v, src, tag)
	}
	// A message that is there or comes within a short poll is received in
	// one transport call that leaves nothing posted, so the buffer needs no
	// pin. The status is filled in place (setStatus says why).
	m := pt2pt.Msg{Mem: buf.mem(), Peer: src, Tag: tag, Flags: pt2pt.Receive | pt2pt.Immediate}
	st, ok, err := c.pc.Run(m)
	if !ok && err == nil {
		p := pinBuffers(buf)
		m.Flags = pt2pt.Receive
		st, _, err = c.pc.Run(m)
		unpin(p)
	}
	s.set(st, buf.Type().Size())
	return face(err)
}

// Isend starts a standard-mode send.
func (c *Comm) Isend(buf Buffer, dest, tag int) (*Request, error) {
	if traceOn {
		defer c.p2pSpan("MPI_Isend", buf, dest).end()
	}
	return c.isend("isend", buf, dest, tag, false)
}

// Issend starts a synchronous-mode send.
func (c *Comm) Issend(buf Buffer, dest, tag int) (*Request, error) {
	if traceOn {
		defer c.p2pSpan("MPI_Issend", buf, dest).end()
	}
	return c.isend("issend", buf, dest, tag, true)
}

// Irecv starts a receive.
func (c *Comm) Irecv(buf Buffer, src, tag int) (*Request, error) {
	if traceOn {
		defer c.p2pSpan("MPI_Irecv", buf, src).end()
	}
	return c.irecv("irecv", buf, src, tag)
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
	if traceOn {
		defer c.p2pSpan("MPI_Sendrecv", sendbuf, dest).end()
	}
	if err := c.check("sendrecv"); err != nil {
		return Status{}, err
	}
	if err := checkBuf("sendrecv", sendbuf); err != nil {
		return Status{}, err
	}
	if err := checkBuf("sendrecv", recvbuf); err != nil {
		return Status{}, err
	}
	sendbuf = sendBuf(sendbuf)
	if v, ok := recvbuf.(*View); ok {
		return c.sendrecvView(sendbuf, dest, sendtag, v, src, recvtag)
	}
	sm, rm := sendbuf.mem(), recvbuf.mem()
	if overlap(sm.Ptr, sm.Len, rm.Ptr, rm.Len) {
		return Status{}, &Error{Op: "sendrecv", Class: ErrBuffer, Err: errOverlap}
	}
	if err := c.pc.CheckRecv("sendrecv", rm, src, recvtag); err != nil {
		return Status{}, face(err)
	}
	if _, sent, err := c.pc.Run(pt2pt.Msg{Mem: sm, Peer: dest, Tag: sendtag, Flags: pt2pt.Immediate}); err != nil {
		return Status{}, face(err)
	} else if sent {
		return c.Recv(recvbuf, src, recvtag)
	}
	rr, err := c.irecv("sendrecv", recvbuf, src, recvtag)
	if err != nil {
		return Status{}, err
	}
	sr, err := c.isend("sendrecv", sendbuf, dest, sendtag, false)
	if err != nil {
		rr.Cancel()
		rr.Wait()
		return Status{}, err
	}
	_, serr := sr.Wait()
	st, rerr := rr.Wait()
	if rerr != nil {
		return st, rerr
	}
	return st, serr
}

// Probe blocks until a message from src with tag can be received and
// describes it (use CountOf to size the buffer).
func (c *Comm) Probe(src, tag int) (Status, error) {
	if traceOn {
		defer c.p2pSpan("MPI_Probe", nil, src).end()
	}
	if err := c.check("probe"); err != nil {
		return Status{}, err
	}
	st, err := c.pc.Probe(src, tag)
	return toStatus(st, 1), face(err)
}

// Iprobe is the nonblocking Probe.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if traceOn {
		defer c.p2pSpan("MPI_Iprobe", nil, src).end()
	}
	if err := c.check("iprobe"); err != nil {
		return Status{}, false, err
	}
	st, ok, err := c.pc.Iprobe(src, tag)
	return toStatus(st, 1), ok, face(err)
}
