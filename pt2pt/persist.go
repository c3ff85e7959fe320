package pt2pt

// CheckSend reports the error a send of m to dest with tag would fail
// with before starting anything (nil when it would start): package mpi's
// persistent sends check their arguments once, at set-up.
func (c *Comm) CheckSend(name string, m Mem, dest, tag int) error {
	return c.checkSend(name, m, dest, tag, c.ctx)
}

// Prepared is an operation checked and resolved once, for a persistent
// request that starts it many times (PostPrepared): its arguments passed
// Post's checks, and its peer's world rank and transport tag (and mask,
// for a receive) are computed.
type Prepared struct {
	c     *Comm
	m     Msg
	world int    // the peer's world rank (a send's, or a named source's)
	tag   uint64 // a send's transport tag, or a receive's match tag
	mask  uint64 // a receive's match mask
}

// Prepare checks m as Post would and resolves its peer and tag. m.Flags
// may hold Receive, Sync and Collective; Immediate is PostPrepared's
// choice.
func (c *Comm) Prepare(m Msg) (*Prepared, error) {
	f := m.Flags &^ (Immediate | running)
	if !c.valid(m.Mem, m.Peer, m.Tag, f) {
		if err := c.argErr(m.Mem, m.Peer, m.Tag, f); err != nil {
			return nil, err
		}
	}
	m.Flags = f
	p := &Prepared{c: c, m: m}
	switch {
	case m.Peer == ProcNull:
	case f&Receive != 0:
		p.tag, p.mask = matchTag(c.context(f), m.Peer, m.Tag)
	default:
		p.world = c.WorldRank(m.Peer)
		p.tag = packTag(c.context(f), c.rank, m.Tag)
	}
	return p, nil
}

// PostPrepared starts p's operation in r, as Post starts the Msg p was
// prepared from, without Post's checks and look-ups. A standard-mode send
// of host memory goes out inside the call when the transport can take it
// (Immediate), or is posted. A point-to-point operation on a communicator
// freed since Prepare fails with ErrComm, as Post's would.
func (c *Comm) PostPrepared(p *Prepared, r *Request) error {
	if p.m.Flags&Collective == 0 && c.freed.Load() {
		return opErr(p.m.Flags.name(), ErrComm, "communicator has been freed")
	}
	if r.op != nil || r.comm != nil || r.err != nil {
		r.op, r.comm, r.err = nil, nil, nil
	}
	r.bufLen, r.status, r.recv, r.done = 0, Status{}, false, false
	m, f := &p.m, p.m.Flags
	if m.Peer == ProcNull {
		r.done, r.status.Source, r.status.Tag, r.recv, r.comm = true, ProcNull, AnyTag, f&Receive != 0, c
		return nil
	}
	var err error
	switch {
	case f&Receive != 0:
		c.e.passScheduler()
		r.op, err = c.e.t.Irecv(m.Mem, p.tag, p.mask)
		r.recv, r.bufLen = true, m.Mem.Len
	case f&Sync == 0 && c.e.imm != nil && m.Mem.Kind == Host:
		var sent bool
		r.op, sent, err = c.e.imm.TrySend(p.world, m.Mem, p.tag)
		if err == nil && sent {
			c.e.passScheduler()
			r.done, r.comm = r.op == nil, c
			return nil
		}
		if err == nil {
			r.op, err = c.e.t.Isend(p.world, m.Mem, p.tag, false)
		}
		c.e.passScheduler()
	default:
		r.op, err = c.e.t.Isend(p.world, m.Mem, p.tag, f&Sync != 0)
		c.e.passScheduler()
	}
	if err != nil {
		r.op = nil
		return &OpError{Op: f.name(), Class: ErrOther, Err: err}
	}
	r.comm = c
	return nil
}
