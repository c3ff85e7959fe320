package core

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/pt2pt"
)

// Partitioned communication (MPI-4's Psend_init, Precv_init, Pready,
// Parrived). Each partition of the sender travels as a message of its own,
// sent once Pready (or the GPU: partitioned_gpu.go) marks it ready, so the
// receiver sees partitions arrive in whatever order they were readied. The
// messages use the communicator's collective context, above the tags of the
// collectives (coll.TagLimit), where no application message can match
// them:
//
//	partHello                     the sender's description of the operation,
//	                              sent once by PsendInit
//	partData | ch<<12 | j         partition j of the sender's channel ch
//
// The channel (chosen by the sender, unique among its live partitioned
// sends on the communicator) tells one operation's partitions from
// another's. A receive is matched to a send by the hello, as MPI matches
// them: the n-th PrecvInit from a source with a tag gets the n-th hello
// from that source with that tag (init order on both sides).
const (
	partHello    = coll.TagLimit
	partData     = coll.TagLimit | 1<<22
	partMaxParts = 1 << 12
	partMaxChans = 1 << 10
)

// partHelloMsg is a hello's payload: the application's tag, the channel,
// the sender's partitions and its buffer's size in bytes.
type partHelloMsg [4]int64

// partChans allocates the channels of each communicator's partitioned
// sends.
var partChans struct {
	mu   sync.Mutex
	used map[*pt2pt.Comm]*[partMaxChans / 64]uint64
}

func allocChan(pc *pt2pt.Comm) (int, bool) {
	partChans.mu.Lock()
	defer partChans.mu.Unlock()
	if partChans.used == nil {
		partChans.used = make(map[*pt2pt.Comm]*[partMaxChans / 64]uint64)
	}
	bits := partChans.used[pc]
	if bits == nil {
		bits = new([partMaxChans / 64]uint64)
		partChans.used[pc] = bits
	}
	for i := range partMaxChans {
		if bits[i/64]&(1<<(i%64)) == 0 {
			bits[i/64] |= 1 << (i % 64)
			return i, true
		}
	}
	return 0, false
}

func freeChan(pc *pt2pt.Comm, ch int) {
	partChans.mu.Lock()
	defer partChans.mu.Unlock()
	if bits := partChans.used[pc]; bits != nil {
		bits[ch/64] &^= 1 << (ch % 64)
	}
}

// partMems cuts b into n partitions' memory, once.
func partMems(b Buffer, n int) []pt2pt.Mem {
	per := b.Len() / n
	ms := make([]pt2pt.Mem, n)
	for i := range ms {
		ms[i] = b.slice(i*per, per).mem()
	}
	return ms
}

// checkParts checks what PsendInit and PrecvInit share.
func (c *Comm) checkParts(op string, b Buffer, parts int) error {
	if err := c.check(op); err != nil {
		return err
	}
	if err := checkBuf(op, b); err != nil {
		return err
	}
	if parts < 1 || parts > partMaxParts {
		return &Error{Op: op, Class: ErrCount, Err: fmt.Errorf("%d partitions (1 to %d)", parts, partMaxParts)}
	}
	if b.Len()%parts != 0 {
		return &Error{Op: op, Class: ErrCount, Err: fmt.Errorf("a buffer of %d elements in %d partitions", b.Len(), parts)}
	}
	return nil
}

// psendInit is a partitioned send.
type psendInit struct {
	c     *Comm
	peer  int
	ch    int
	mems  []pt2pt.Mem
	pin   *runtime.Pinner
	hello *partHelloMsg
	hr    pt2pt.Request // the hello's send

	mu     sync.Mutex
	active bool
	round  uint32 // Starts so far
	ready  []bool
	reqs   []pt2pt.Request // each readied partition's send
	sent   int             // partitions readied this round
	err    error
	flags  *partFlags // GPU-triggered readiness (PreadyFlags); nil: none
}

// PsendInit makes a partitioned send of buf, in partitions equal parts,
// to dest with tag (MPI_Psend_init). Each round (Start) sends a partition
// once Pready marks it ready; Wait completes once all have been sent.
func (c *Comm) PsendInit(buf Buffer, partitions, dest, tag int) (*Request, error) {
	const op = "psend init"
	if err := c.checkParts(op, buf, partitions); err != nil {
		return nil, err
	}
	if err := c.pc.CheckSend(op, buf.mem(), dest, tag); err != nil {
		return nil, face(err)
	}
	usePartWork(c.pc.Engine())
	p := &psendInit{c: c, peer: dest, ready: make([]bool, partitions), reqs: make([]pt2pt.Request, partitions)}
	if dest != ProcNull {
		ch, ok := allocChan(c.pc)
		if !ok {
			return nil, &Error{Op: op, Class: ErrNoMem, Err: fmt.Errorf("more than %d partitioned sends on the communicator", partMaxChans)}
		}
		p.ch, p.mems = ch, partMems(buf, partitions)
		p.hello = &partHelloMsg{int64(tag), int64(ch), int64(partitions), int64(buf.mem().Len)}
		p.pin = pinBuffers(buf)
		p.pin.Pin(p.hello)
		hm := pt2pt.Mem{Ptr: unsafe.Pointer(p.hello), Len: int(unsafe.Sizeof(*p.hello))}
		if err := c.pc.Post(pt2pt.Msg{Mem: hm, Peer: dest, Tag: partHello, Flags: pt2pt.Collective}, &p.hr); err != nil {
			freeChan(c.pc, ch)
			unpin(p.pin)
			return nil, face(err)
		}
	}
	return newPersistent(c.life, buf.Type().Size(), p), nil
}

func (p *psendInit) start(r *Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.round++
	clear(p.ready)
	p.active, p.sent, p.err = true, 0, nil
	r.done, r.p2p, r.sched = false, false, psendRound{p}
	if p.flags != nil {
		addPartWork(p)
	}
	return nil
}

// readyLocked marks partition i ready and sends it. p.mu is held.
func (p *psendInit) readyLocked(op string, i int) error {
	if !p.active {
		return &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("the partitioned send is not active (Start it)")}
	}
	if i < 0 || i >= len(p.ready) {
		return &Error{Op: op, Class: ErrArg, Err: fmt.Errorf("partition %d of %d", i, len(p.ready))}
	}
	if p.ready[i] {
		return &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("partition %d is ready already this round", i)}
	}
	p.ready[i] = true
	p.sent++
	if p.peer == ProcNull {
		return nil
	}
	m := pt2pt.Msg{Mem: p.mems[i], Peer: p.peer, Tag: partData | p.ch<<12 | i, Flags: pt2pt.Collective}
	if err := p.c.pc.Post(m, &p.reqs[i]); err != nil {
		p.err = face(err)
		return p.err
	}
	return nil
}

// Pready marks a partition of an active partitioned send ready
// (MPI_Pready): it is sent from then on, and its part of the buffer must
// not change until the round completes. Marking one twice in a round is an
// ErrRequest; an index out of range an ErrArg.
func (r *Request) Pready(partition int) error {
	return r.preadyEach("pready", func(yield func(int) bool) { yield(partition) })
}

// PreadyRange marks partitions lo through hi (inclusive) ready
// (MPI_Pready_range).
func (r *Request) PreadyRange(lo, hi int) error {
	return r.preadyEach("pready range", func(yield func(int) bool) {
		for i := lo; i <= hi && yield(i); i++ {
		}
	})
}

// PreadyList marks the listed partitions ready (MPI_Pready_list).
func (r *Request) PreadyList(partitions ...int) error {
	return r.preadyEach("pready list", func(yield func(int) bool) {
		for _, i := range partitions {
			if !yield(i) {
				return
			}
		}
	})
}

func (r *Request) preadyEach(op string, parts func(func(int) bool)) error {
	p, err := r.psend(op)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	parts(func(i int) bool {
		err = p.readyLocked(op, i)
		return err == nil
	})
	return err
}

// psend returns r's partitioned send, or the error of a request that is
// none.
func (r *Request) psend(op string) (*psendInit, error) {
	if r != nil && r.pers != nil && !r.pers.freed {
		if p, ok := r.pers.op.(*psendInit); ok {
			return p, nil
		}
	}
	return nil, &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("not a partitioned send")}
}

// psendRound is the active round of a partitioned send, as the Request
// drives it (a collRequest).
type psendRound struct{ p *psendInit }

// Test sends the partitions the GPU has readied, and reports whether every
// partition has been readied and sent.
func (q psendRound) Test() (bool, error) {
	p := q.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return true, p.err
	}
	p.pollFlagsLocked()
	if p.err != nil || p.sent < len(p.ready) {
		return p.err != nil, p.err
	}
	for i := range p.reqs {
		if p.peer == ProcNull || !p.reqs[i].Posted() {
			continue
		}
		ok, _, err := p.reqs[i].Test()
		if !ok {
			return false, nil
		}
		if err != nil && p.err == nil {
			p.err = face(err)
		}
	}
	p.active = false
	return true, p.err
}

// Wait tests under the engine's wait policy.
func (q psendRound) Wait() error { return waitTesting(q.p.c, q.Test) }

// waitTesting waits for test to report completion, progressing the
// transport between tries (Idle).
func waitTesting(c *Comm, test func() (bool, error)) error {
	e := c.pc.Engine()
	for i := 0; ; i++ {
		if ok, err := test(); ok {
			return err
		}
		e.Progress()
		e.Idle(i)
	}
}

func (p *psendInit) release() {
	dropPartWork(p)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flags.free()
	p.flags = nil
	if p.peer == ProcNull {
		return
	}
	freeChan(p.c.pc, p.ch)
	if ok, _, _ := p.hr.Test(); ok {
		unpin(p.pin)
	} else {
		keepPinned(p.pin) // the hello has not left: its memory must stay put
	}
	p.pin = nil
}

// keepPinned keeps pinners whose memory a transport may still read,
// reachable for the process's life.
var kept struct {
	mu sync.Mutex
	ps []*runtime.Pinner
}

func keepPinned(p *runtime.Pinner) {
	kept.mu.Lock()
	kept.ps = append(kept.ps, p)
	kept.mu.Unlock()
}
