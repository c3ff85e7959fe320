package core

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/gompix/gompix/pt2pt"
)

// Persistent requests (MPI_Send_init and the rest): the Init call checks
// the arguments, pins the buffers and prepares the operation once; each
// Start begins one round of it in the same Request, which Wait and Test
// complete as any other and leave inactive, ready for the next Start.

// persistent is what a persistent Request adds to a plain one.
type persistent struct {
	op persistentOp
	// freed: Free has been called; Start refuses the request.
	freed bool
}

// persistentOp is one kind of persistent operation.
type persistentOp interface {
	// start begins a round in r, which is inactive (r.done); on error r
	// stays inactive.
	start(r *Request) error
	// release lets go of what the set-up holds (pins): no round is in
	// flight.
	release()
}

// live holds every persistent request's set-up until Free: the pins it
// holds must stay reachable (a runtime.Pinner collected while pinning is
// a fatal error), also when the application drops a request unfreed, as
// MPI's own would leak.
var live struct {
	mu  sync.Mutex
	ops map[persistentOp]struct{}
}

func newPersistent(life *lifetime, elemSize int, op persistentOp) *Request {
	live.mu.Lock()
	if live.ops == nil {
		live.ops = make(map[persistentOp]struct{})
	}
	live.ops[op] = struct{}{}
	live.mu.Unlock()
	return &Request{elemSize: elemSize, done: true, life: life, pers: &persistent{op: op}}
}

func releasePersistent(op persistentOp) {
	op.release()
	live.mu.Lock()
	delete(live.ops, op)
	live.mu.Unlock()
}

// Start begins a round of a persistent request (MPI_Start). Starting a
// request that is active (started and not yet completed by Wait or Test),
// freed, or not persistent is an ErrRequest.
func (r *Request) Start() error {
	if r == nil || r.pers == nil {
		return &Error{Op: "start", Class: ErrRequest, Err: fmt.Errorf("not a persistent request")}
	}
	if r.pers.freed {
		return &Error{Op: "start", Class: ErrRequest, Err: fmt.Errorf("the request has been freed")}
	}
	if !r.done {
		return &Error{Op: "start", Class: ErrRequest, Err: fmt.Errorf("the request is active (Wait or Test it to completion first)")}
	}
	if err := r.ended("start"); err != nil {
		return err
	}
	r.status, r.err = Status{}, nil
	return r.pers.op.start(r)
}

// Startall starts every request (MPI_Startall), in order; it stops at the
// first that fails and returns its error.
func Startall(rs ...*Request) error {
	for _, r := range rs {
		if err := r.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Persistent reports whether r was made by one of the Init calls.
func (r *Request) Persistent() bool { return r != nil && r.pers != nil }

// freePersistent is Free of a persistent request: an inactive one's set-up
// is released at once; an active one completes in the background (parked
// as a freed nonpersistent request is) and is released then.
func (r *Request) freePersistent() {
	p := r.pers
	if p.freed {
		return
	}
	p.freed = true
	if r.done || r.ended("free") != nil {
		r.done = true
		releasePersistent(p.op)
		return
	}
	r.done = true
	parkFreed(r)
}

// p2pInit is a persistent send or receive: the transport's operation,
// checked and resolved once (pt2pt.Prepared), on a buffer pinned once.
type p2pInit struct {
	c      *Comm
	prep   *pt2pt.Prepared
	pinner *runtime.Pinner
}

func (p *p2pInit) start(r *Request) error {
	if anyFreed.Load() {
		sweepFreed()
	}
	r.done, r.p2p = false, true
	if err := p.c.pc.PostPrepared(p.prep, &r.r); err != nil {
		r.done = true
		return face(err)
	}
	return nil
}

func (p *p2pInit) release() {
	unpin(p.pinner)
	p.pinner = nil
}

// p2pInit makes the persistent request of the operation m describes on b,
// its arguments checked as the nonpersistent call checks them.
func (c *Comm) p2pInit(op string, b Buffer, m pt2pt.Msg) (*Request, error) {
	if err := c.check(op); err != nil {
		return nil, err
	}
	if err := checkBuf(op, b); err != nil {
		return nil, err
	}
	m.Mem = b.mem()
	if m.Flags&pt2pt.Receive != 0 {
		if err := c.pc.CheckRecv(op, m.Mem, m.Peer, m.Tag); err != nil {
			return nil, face(err)
		}
	} else if err := c.pc.CheckSend(op, m.Mem, m.Peer, m.Tag); err != nil {
		return nil, face(err)
	}
	prep, err := c.pc.Prepare(m)
	if err != nil {
		return nil, face(err)
	}
	p := &p2pInit{c: c, prep: prep}
	if m.Peer != ProcNull {
		p.pinner = pinBuffers(b)
	}
	return newPersistent(c.life, b.Type().Size(), p), nil
}

// SendInit makes a persistent standard-mode send of buf to dest with tag
// (MPI_Send_init): Start sends it, each time with buf's contents then.
func (c *Comm) SendInit(buf Buffer, dest, tag int) (*Request, error) {
	return c.p2pInit("send init", buf, pt2pt.Msg{Peer: dest, Tag: tag})
}

// SsendInit makes a persistent synchronous-mode send (MPI_Ssend_init).
func (c *Comm) SsendInit(buf Buffer, dest, tag int) (*Request, error) {
	return c.p2pInit("ssend init", buf, pt2pt.Msg{Peer: dest, Tag: tag, Flags: pt2pt.Sync})
}

// RecvInit makes a persistent receive into buf from src (or AnySource)
// with tag (or AnyTag) (MPI_Recv_init).
func (c *Comm) RecvInit(buf Buffer, src, tag int) (*Request, error) {
	return c.p2pInit("recv init", buf, pt2pt.Msg{Peer: src, Tag: tag, Flags: pt2pt.Receive})
}
