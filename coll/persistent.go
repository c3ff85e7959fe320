package coll

import (
	"errors"
	"fmt"

	"github.com/gompix/gompix/internal/dtype"
)

// Persistent is a collective set up once and started many times (MPI-4's
// persistent collectives): its arguments are checked, its algorithm chosen,
// its schedule built, its tag taken and its buffers and scratch space
// pinned by Init; each Start only runs the schedule again on the same
// buffers. A State's collectives keep their order on every rank, and Init
// is one of them (it takes the next tag); the rounds of one Persistent all
// use that tag, which is safe because at most one round is in flight and
// every round sends each peer the same messages, which the transport
// delivers in order.
type Persistent struct {
	s    *State
	c    Call
	pl   *plan       // the schedule; nil for a Direct call
	dc   *DirectCall // the Direct engine's call; nil for a schedule
	op   Op
	t    dtype.Type
	send []byte
	recv []byte
	tmp  []byte // the scratch space, this collective's own
	tag  int
	// caps is the space's, with pins already held (heldPins): the executor
	// then pins nothing per round.
	caps *spaceCaps
	pins []any // the space Pinner's tokens, released by Free
	e    *exec // the last round's executor, reused once it has completed
	err  error // a round failed: the schedule's messages may be astray
}

// ErrActive: Start on a Persistent whose last round has not completed.
var ErrActive = errors.New("coll: persistent collective started while active")

// Init sets up the collective that start describes without running it:
// start is one of the State's methods (Allreduce, Bcast, …) called with the
// Call it is handed, which Init records instead of running. Init is a
// collective call like any other: every rank makes it in the same order.
// c must be nonblocking and off any stream.
func (s *State) Init(c Call, start func(Call) (Request, error)) (*Persistent, error) {
	if c.Blocking || c.Stream != 0 {
		return nil, fmt.Errorf("coll: a persistent collective is nonblocking and off streams: %w", ErrBuffer)
	}
	p := &Persistent{s: s, c: c}
	s.rec = p
	_, err := start(c)
	s.rec = nil
	if err != nil {
		return nil, err
	}
	if p.pl == nil && p.dc == nil {
		return nil, fmt.Errorf("coll: persistent collective: nothing recorded")
	}
	if p.pl != nil {
		if err := p.prepare(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// record is run's work under Init: it keeps the call instead of starting
// it, and returns a request already complete (Init discards it).
func (p *Persistent) record(pl *plan, op Op, t dtype.Type, send, recv []byte, tag int) (Request, error) {
	p.pl, p.op, p.t, p.send, p.recv, p.tag = pl, op, t, send, recv, tag
	return done{}, nil
}

// recordDirect is startDirect's work under Init.
func (p *Persistent) recordDirect(dc *DirectCall) {
	cp := *dc
	p.dc = &cp
}

// prepare allocates the scratch space and pins the buffers once.
func (p *Persistent) prepare() error {
	_, mem := p.s.space(p.c)
	if p.pl.tmp > 0 {
		buf, err := mem.Alloc(p.pl.tmp)
		if err != nil {
			return fmt.Errorf("coll: %v: scratch: %w", p.pl.alg, err)
		}
		p.tmp = buf
	}
	caps := *p.s.caps(p.c)
	if caps.pin != nil {
		for _, b := range [...][]byte{p.send, p.recv, p.tmp} {
			if len(b) > 0 {
				p.pins = append(p.pins, caps.pin.Pin(b))
			}
		}
		caps.pin = heldPins{}
	}
	p.caps = &caps
	return nil
}

// heldPins is the Pinner of a Persistent's rounds: its buffers are pinned
// for its whole life, so the executor's pins cost nothing.
type heldPins struct{}

func (heldPins) Pin([]byte) any { return true }
func (heldPins) Unpin(any)      {}

// Algorithm is the name of the algorithm Init chose (DirectName for the
// Direct engine).
func (p *Persistent) Algorithm() string {
	if p.dc != nil {
		return DirectName
	}
	return p.pl.alg.Name
}

// Start runs one round. The previous round must have completed (its
// request Tested or Waited to completion): else ErrActive.
func (p *Persistent) Start() (Request, error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.dc != nil {
		dc := *p.dc
		r, err := p.s.dev.Direct.Start(&dc)
		if err != nil {
			p.err = fmt.Errorf("coll: %v:%s: %w", dc.Kind, DirectName, err)
			return nil, p.err
		}
		return r, nil
	}
	e := p.e
	if e == nil {
		e = new(exec)
		p.e = e
	} else {
		e.mu.Lock()
		if !e.done || e.inDomain {
			e.mu.Unlock()
			return nil, ErrActive
		}
		if e.err != nil {
			// Receives of the failed round may still land in the buffers.
			p.err = e.err
			e.mu.Unlock()
			return nil, p.err
		}
		e.reset()
		e.mu.Unlock()
	}
	comm, mem := p.s.space(p.c)
	e.prog, e.pl, e.comm, e.mem, e.op, e.t, e.tag = p.s.prog, p.pl, comm, mem, p.op, p.t, p.tag
	e.caps = p.caps
	e.bufs[slotSend], e.bufs[slotRecv], e.bufs[slotTmp] = p.send, p.recv, p.tmp
	e.reqs = e.reqArr[:0]
	if len(p.pl.rounds) == 0 {
		e.finish()
		return e, nil
	}
	e.mu.Lock()
	e.inDomain = true
	e.mu.Unlock()
	p.s.prog.add(e)
	return e, nil
}

// Free releases the pins Init took. No round may be in flight.
func (p *Persistent) Free() {
	if pin := p.s.caps(p.c).pin; pin != nil {
		for _, t := range p.pins {
			pin.Unpin(t)
		}
	}
	p.pins = nil
}
