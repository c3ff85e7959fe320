package core

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/gompix/gompix/pt2pt"
)

// precvInit is a partitioned receive.
type precvInit struct {
	c     *Comm
	src   int
	tag   int
	parts int
	mem   pt2pt.Mem
	pin   *runtime.Pinner

	mu sync.Mutex
	// Set once the sender's hello is matched (matchLocked): its channel,
	// and the memory of each of its partitions in this buffer.
	matched bool
	ch      int
	smems   []pt2pt.Mem
	sdone   []bool // each sender partition arrived this round
	reqs    []pt2pt.Request

	started bool // a round has been started
	active  bool
	posted  bool // this round's receives are posted
	left    int  // sender partitions not arrived this round
	err     error
	bad     error // the send does not fit (matchLocked): every round's error
}

// PrecvInit makes a partitioned receive into buf, in partitions equal
// parts, from src with tag (MPI_Precv_init); neither may be a wildcard. The
// sender may cut the same number of bytes into other partitions. Parrived
// tells which partitions have arrived in the active round.
func (c *Comm) PrecvInit(buf Buffer, partitions, src, tag int) (*Request, error) {
	const op = "precv init"
	if err := c.checkParts(op, buf, partitions); err != nil {
		return nil, err
	}
	if src == AnySource {
		return nil, &Error{Op: op, Class: ErrRank, Err: fmt.Errorf("a partitioned receive names its source")}
	}
	if tag == AnyTag {
		return nil, &Error{Op: op, Class: ErrTag, Err: fmt.Errorf("a partitioned receive names its tag")}
	}
	if err := c.pc.CheckRecv(op, buf.mem(), src, tag); err != nil {
		return nil, face(err)
	}
	usePartWork(c.pc.Engine())
	p := &precvInit{c: c, src: src, tag: tag, parts: partitions, mem: buf.mem()}
	if src != ProcNull {
		p.pin = pinBuffers(buf)
		matcherOf(c.pc).add(p)
	}
	return newPersistent(c.life, buf.Type().Size(), p), nil
}

func (p *precvInit) start(r *Request) error {
	p.mu.Lock()
	p.started, p.active, p.posted, p.err = true, true, false, p.bad
	r.done, r.p2p, r.sched = false, false, precvRound{p}
	p.mu.Unlock()
	if p.src != ProcNull {
		matcherOf(p.c.pc).poll(p.src)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.postLocked() // a failure is the round's, reported by Test and Wait
	if p.src != ProcNull && !p.posted && p.err == nil {
		addPartWork(p) // not matched yet: the background matches and posts
	}
	return nil
}

// matchLocked records the sender's hello: its channel and partitions.
func (p *precvInit) matchLocked(h partHelloMsg) {
	p.matched, p.ch = true, int(h[1])
	sparts, n := int(h[2]), int(h[3])
	if n != p.mem.Len || sparts < 1 || n%sparts != 0 {
		p.bad = &Error{Op: "precv", Class: ErrTruncate,
			Err: fmt.Errorf("the partitioned send has %d bytes in %d partitions, the receive %d bytes", n, sparts, p.mem.Len)}
		p.err = p.bad
		return
	}
	per := n / sparts
	p.smems = make([]pt2pt.Mem, sparts)
	for j := range p.smems {
		m := p.mem
		if per > 0 {
			m.Ptr = unsafe.Add(m.Ptr, j*per)
		}
		m.Len = per
		p.smems[j] = m
	}
	p.sdone = make([]bool, sparts)
	p.reqs = make([]pt2pt.Request, sparts)
}

// postLocked posts the active round's receives once the send is matched.
func (p *precvInit) postLocked() error {
	if !p.active || p.posted || !p.matched || p.err != nil {
		return p.err
	}
	p.posted, p.left = true, len(p.smems)
	clear(p.sdone)
	for j, m := range p.smems {
		msg := pt2pt.Msg{Mem: m, Peer: p.src, Tag: partData | p.ch<<12 | j, Flags: pt2pt.Receive | pt2pt.Collective}
		if err := p.c.pc.Post(msg, &p.reqs[j]); err != nil {
			p.err = face(err)
			return p.err
		}
	}
	return nil
}

// progress advances the active round: matching, posting, arrivals.
func (p *precvInit) progress() {
	if p.src == ProcNull {
		return
	}
	p.mu.Lock()
	matched := p.matched
	p.mu.Unlock()
	if !matched {
		matcherOf(p.c.pc).poll(p.src)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.postLocked() != nil || !p.posted {
		return
	}
	for j := range p.reqs {
		if p.sdone[j] {
			continue
		}
		ok, st, err := p.reqs[j].Test()
		if !ok {
			continue
		}
		p.sdone[j] = true
		p.left--
		if err == nil && st.Bytes != p.smems[j].Len {
			err = &Error{Op: "precv", Class: ErrTruncate, Err: fmt.Errorf("partition %d: %d bytes, want %d", j, st.Bytes, p.smems[j].Len)}
		}
		if err != nil && p.err == nil {
			p.err = face(err)
		}
	}
}

// Parrived reports whether a partition of an active partitioned receive
// has arrived (MPI_Parrived); once the round has completed, every partition
// has. An index out of range is an ErrArg, a receive never started an
// ErrRequest.
func (r *Request) Parrived(partition int) (bool, error) {
	const op = "parrived"
	var p *precvInit
	if r != nil && r.pers != nil && !r.pers.freed {
		p, _ = r.pers.op.(*precvInit)
	}
	if p == nil {
		return false, &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("not a partitioned receive")}
	}
	if partition < 0 || partition >= p.parts {
		return false, &Error{Op: op, Class: ErrArg, Err: fmt.Errorf("partition %d of %d", partition, p.parts)}
	}
	p.progress()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.started:
		return false, &Error{Op: op, Class: ErrRequest, Err: fmt.Errorf("the partitioned receive has not been started")}
	case !p.active || p.src == ProcNull:
		return true, nil
	case p.err != nil:
		return false, p.err
	case !p.posted:
		return false, nil
	}
	// The sender's partitions that overlap this one's bytes.
	per, sper := p.mem.Len/p.parts, p.mem.Len/len(p.smems)
	if per == 0 || sper == 0 {
		return p.left == 0, nil
	}
	lo, hi := partition*per/sper, ((partition+1)*per-1)/sper
	return !slices.Contains(p.sdone[lo:hi+1], false), nil
}

// precvRound is the active round of a partitioned receive (a collRequest).
type precvRound struct{ p *precvInit }

func (q precvRound) Test() (bool, error) {
	p := q.p
	p.progress()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return true, p.err
	}
	if p.src != ProcNull && p.err == nil && (!p.posted || p.left > 0) {
		return false, nil
	}
	p.active = false
	return true, p.err
}

func (q precvRound) Wait() error { return waitTesting(q.p.c, q.Test) }

func (p *precvInit) release() {
	if p.src == ProcNull {
		return
	}
	dropPartWork(p)
	matcherOf(p.c.pc).remove(p)
	unpin(p.pin)
	p.pin = nil
}

// partMatcher matches the hellos a communicator's partitioned receives get
// from each source to them, in init order.
type partMatcher struct {
	pc   *pt2pt.Comm
	mu   sync.Mutex
	srcs map[int]*partSource
}

// partSource is one source's hellos: the receive posted for the next
// one, those that came before their PrecvInit, and the PrecvInits not
// matched yet, each in order.
type partSource struct {
	buf     *partHelloMsg
	pin     *runtime.Pinner
	req     pt2pt.Request
	posted  bool
	stash   []partHelloMsg
	waiting []*precvInit
}

var partMatchers struct {
	mu sync.Mutex
	m  map[*pt2pt.Comm]*partMatcher
}

func matcherOf(pc *pt2pt.Comm) *partMatcher {
	partMatchers.mu.Lock()
	defer partMatchers.mu.Unlock()
	if partMatchers.m == nil {
		partMatchers.m = make(map[*pt2pt.Comm]*partMatcher)
	}
	m := partMatchers.m[pc]
	if m == nil {
		m = &partMatcher{pc: pc, srcs: make(map[int]*partSource)}
		partMatchers.m[pc] = m
	}
	return m
}

func (m *partMatcher) add(p *precvInit) {
	m.mu.Lock()
	s := m.srcs[p.src]
	if s == nil {
		s = &partSource{buf: new(partHelloMsg)}
		m.srcs[p.src] = s
	}
	s.waiting = append(s.waiting, p)
	m.mu.Unlock()
	m.poll(p.src)
}

func (m *partMatcher) remove(p *precvInit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.srcs[p.src]; s != nil {
		s.waiting = slices.DeleteFunc(s.waiting, func(q *precvInit) bool { return q == p })
	}
}

// poll takes the hellos from src that have come and matches them.
func (m *partMatcher) poll(src int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.srcs[src]
	if s == nil {
		return
	}
	for {
		s.matchLocked()
		if s.posted {
			ok, _, err := s.req.Test()
			if !ok {
				return
			}
			s.posted = false
			unpin(s.pin)
			s.pin = nil
			if err == nil {
				s.stash = append(s.stash, *s.buf)
			}
			continue
		}
		if len(s.waiting) == 0 {
			return
		}
		s.pin = pinners.Get().(*runtime.Pinner)
		s.pin.Pin(s.buf)
		hm := pt2pt.Mem{Ptr: unsafe.Pointer(s.buf), Len: int(unsafe.Sizeof(*s.buf))}
		if err := m.pc.Post(pt2pt.Msg{Mem: hm, Peer: src, Tag: partHello, Flags: pt2pt.Receive | pt2pt.Collective}, &s.req); err != nil {
			unpin(s.pin)
			s.pin = nil
			return
		}
		s.posted = true
	}
}

// matchLocked gives each waiting receive, in init order, the first stashed
// hello with its tag.
func (s *partSource) matchLocked() {
	s.waiting = slices.DeleteFunc(s.waiting, func(p *precvInit) bool {
		i := slices.IndexFunc(s.stash, func(h partHelloMsg) bool { return int(h[0]) == p.tag })
		if i < 0 {
			return false
		}
		p.mu.Lock()
		p.matchLocked(s.stash[i])
		p.mu.Unlock()
		s.stash = slices.Delete(s.stash, i, i+1)
		return true
	})
}
