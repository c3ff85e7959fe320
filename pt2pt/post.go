package pt2pt

// Msg describes one point-to-point operation, for Comm.Post (start it)
// or Comm.Run (run it to completion, a blocking call).
type Msg struct {
	Mem Mem // sent from, or received into
	// Peer is the destination of a send, the source of a receive: a rank
	// of the communicator, ProcNull, or (a receive) AnySource.
	Peer  int
	Tag   int // a receive may take AnyTag
	Flags Flags
}

// Flags say what a Msg is and how it runs; the zero value is a
// standard-mode send on the point-to-point context.
type Flags uint8

const (
	// Receive makes the operation a receive; without it, a send.
	Receive Flags = 1 << iota
	// Collective puts the operation on the communicator's collective
	// context (Context()+1: package coll's messages, through package mpi)
	// instead of its point-to-point one.
	Collective
	// Sync makes a send synchronous (MPI_Issend): it completes once a
	// receive has matched it.
	Sync
	// Immediate asks for the operation to be done within the call, which
	// then keeps no reference to the buffer, so it need not be pinned: a
	// standard-mode host send the transport takes at once
	// (Caps.ImmediateSend), or a host receive of up to TryRecvMax bytes whose
	// message is there or arrives within the transport's short poll
	// (Caps.ImmediateRecv). When the transport cannot, nothing is done (Post
	// leaves the Request not Posted, Run reports false), and the caller
	// makes the operation again without Immediate. A send the transport
	// still holds queued (its queue to the peer was full) is pending after
	// Post and waited for by Run; its buffer is free at once all the same.
	Immediate
)

// running marks an operation of Run (a blocking call) inside the engine.
const running Flags = 1 << 7

// opNames name an operation in its errors, by its Receive and Collective
// flags and, in the bit above them, running.
var opNames = [8]string{
	0: "isend", Receive: "irecv", Collective: "coll send", Receive | Collective: "coll recv",
	ran: "send", ran | Receive: "recv", ran | Collective: "coll send", ran | Receive | Collective: "coll recv",
}

// ran is running moved next to Receive and Collective, for opNames.
const ran = running >> 5

// name is the operation's name in its errors.
func (f Flags) name() string { return opNames[f&(Receive|Collective)|f&running>>5] }

// context is the context id of an operation with flags f on c.
func (c *Comm) context(f Flags) uint32 { return c.ctx + uint32(f&Collective>>1) }

// Post starts the operation m describes in r, which it fills in whatever r
// held before: r is the caller's, embedded in its own request (package mpi)
// or on its stack, because a Request returned by value is built in a
// temporary and copied, which costs about what a short message's whole
// immediate send does. Argument errors (a freed communicator, a peer or tag
// out of range, a malformed buffer) are returned before anything starts,
// leaving r not Posted; the operation's own outcome (a truncation) comes
// from r. See Flags for the variants.
func (c *Comm) Post(m Msg, r *Request) error {
	// Field by field: a composite literal would be built aside and copied.
	// Pointers only when set: each write costs a write barrier while the
	// collector marks, and a new Request holds none.
	if r.op != nil || r.comm != nil || r.err != nil {
		r.op, r.comm, r.err = nil, nil, nil
	}
	r.bufLen, r.status, r.recv, r.done = 0, Status{}, false, false
	f := m.Flags &^ running
	var err error
	switch f & (Receive | Immediate) {
	case 0:
		r.op, err = c.send(m.Mem, m.Peer, m.Tag, f)
	case Immediate:
		var sent bool
		r.op, sent, err = c.trySend(m.Mem, m.Peer, m.Tag, f)
		if !sent || err != nil {
			return err
		}
		r.done = r.op == nil // gone already (or ProcNull)
		r.comm = c
		return nil
	case Receive:
		r.op, err = c.recv(m.Mem, m.Peer, m.Tag, f)
		r.recv, r.bufLen = true, m.Mem.Len
	default:
		var ok bool
		r.status, ok, err = c.tryRecv(m.Mem, m.Peer, m.Tag, f)
		if !ok {
			return err
		}
		r.recv, r.done, r.err, r.comm = true, true, err, c // a truncation is r's outcome
		return nil
	}
	if err != nil {
		return err
	}
	if r.op == nil { // ProcNull
		r.done, r.status.Source, r.status.Tag = true, ProcNull, AnyTag
	}
	r.comm = c
	return nil
}

// Run runs the operation m describes to completion, as a blocking call,
// and returns its status (a receive's) and error. It reports false only
// for an Immediate operation the transport could not do within the call,
// and for argument errors: nothing was done. Without Immediate, a receive
// may poll for its message within the call that posts it
// (Caps.BlockingRecv).
func (c *Comm) Run(m Msg) (Status, bool, error) {
	f := m.Flags | running
	switch f & (Receive | Immediate) {
	case Immediate:
		// No Request unless the message is still queued: the common case
		// needs none.
		op, sent, err := c.trySend(m.Mem, m.Peer, m.Tag, f)
		if op == nil || err != nil {
			return Status{}, sent, err
		}
		r := Request{op: op, comm: c}
		_, err = r.Wait()
		return Status{}, true, err
	case Receive | Immediate:
		return c.tryRecv(m.Mem, m.Peer, m.Tag, f)
	}
	return c.run(m.Mem, m.Peer, m.Tag, f)
}

// run is Run of an operation posted to the transport: it posts it and
// waits for it.
func (c *Comm) run(m Mem, peer, tag int, f Flags) (Status, bool, error) {
	var r Request
	var err error
	if f&Receive != 0 {
		r.op, err = c.recv(m, peer, tag, f)
		r.recv, r.bufLen = true, m.Len
	} else {
		r.op, err = c.send(m, peer, tag, f)
	}
	if err != nil {
		return Status{}, false, err
	}
	if r.op == nil {
		return Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	r.comm = c
	st, err := r.Wait()
	return st, true, err
}

// Shorthands of Post and Run for tests and simple callers.

// Isend starts a send of m to dest with an MPI tag; sync selects
// synchronous mode (MPI_Issend).
func (c *Comm) Isend(m Mem, dest, tag int, sync bool) (*Request, error) {
	f := Flags(0)
	if sync {
		f = Sync
	}
	r := new(Request)
	if err := c.Post(Msg{Mem: m, Peer: dest, Tag: tag, Flags: f}, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Irecv starts a receive into m from src (or AnySource) with tag (or
// AnyTag).
func (c *Comm) Irecv(m Mem, src, tag int) (*Request, error) {
	r := new(Request)
	if err := c.Post(Msg{Mem: m, Peer: src, Tag: tag, Flags: Receive}, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Send is the blocking Isend.
func (c *Comm) Send(m Mem, dest, tag int, sync bool) error {
	f := Flags(0)
	if sync {
		f = Sync
	}
	_, _, err := c.Run(Msg{Mem: m, Peer: dest, Tag: tag, Flags: f})
	return err
}

// Recv is the blocking Irecv.
func (c *Comm) Recv(m Mem, src, tag int) (Status, error) {
	st, _, err := c.Run(Msg{Mem: m, Peer: src, Tag: tag, Flags: Receive})
	return st, err
}

// TrySend is Send with Immediate: it reports whether the message was sent;
// when it was not, nothing was sent and the caller uses Send.
func (c *Comm) TrySend(m Mem, dest, tag int) (bool, error) {
	_, sent, err := c.Run(Msg{Mem: m, Peer: dest, Tag: tag, Flags: Immediate})
	return sent, err
}

// TryRecv is Recv with Immediate: it reports whether a message was
// received; when none was, nothing is posted and the caller uses Recv.
func (c *Comm) TryRecv(m Mem, src, tag int) (Status, bool, error) {
	return c.Run(Msg{Mem: m, Peer: src, Tag: tag, Flags: Receive | Immediate})
}

// valid reports, in one leaf call, whether an operation with flags f
// passes every argument check of checkSend or checkRecv; those, which name
// the operation in their errors, run only when it does not (argErr).
// TestValidAgreesWithChecks holds the two together.
func (c *Comm) valid(m Mem, peer, tag int, f Flags) bool {
	if c == nil || (f&Collective == 0 && c.freed.Load()) {
		return false
	}
	recv := f&Receive != 0
	if (peer < 0 || peer >= c.size) && peer != ProcNull && !(recv && peer == AnySource) {
		return false
	}
	if (tag < 0 || tag > MaxTag) && !(recv && tag == AnyTag) {
		return false
	}
	return m.Len >= 0 && (m.Len == 0 || m.Ptr != nil) && (m.Kind != Device || c.e.deviceOK)
}

// argErr is the error of an operation valid refused.
func (c *Comm) argErr(m Mem, peer, tag int, f Flags) error {
	var ctx uint32
	if c != nil {
		ctx = c.context(f)
	}
	if f&Receive != 0 {
		return c.checkRecv(f.name(), m, peer, tag, ctx)
	}
	return c.checkSend(f.name(), m, peer, tag, ctx)
}

// checkSend checks a send's arguments on context ctx: a live
// communicator (checkOn), a valid destination and tag, a well-formed
// buffer.
func (c *Comm) checkSend(name string, m Mem, dest, tag int, ctx uint32) error {
	if err := c.checkOn(name, ctx); err != nil {
		return err
	}
	if err := c.checkPeer(name, dest, false); err != nil {
		return err
	}
	if err := checkTag(name, tag, false); err != nil {
		return err
	}
	return c.checkMem(name, m)
}

// send checks a send's arguments and posts it; a nil Op without an error
// is a send to ProcNull.
func (c *Comm) send(m Mem, dest, tag int, f Flags) (Op, error) {
	if !c.valid(m, dest, tag, f) {
		if err := c.argErr(m, dest, tag, f); err != nil {
			return nil, err
		}
	}
	if dest == ProcNull {
		return nil, nil
	}
	op, err := c.e.t.Isend(c.WorldRank(dest), m, packTag(c.context(f), c.rank, tag), f&Sync != 0)
	c.e.passScheduler() // after the send: its message is on its way meanwhile
	if err != nil {
		return nil, &OpError{Op: f.name(), Class: ErrOther, Err: err}
	}
	return op, nil
}

// trySend is an Immediate send: sent, with op the transport's operation
// still holding the message queued or nil when it is gone (also for
// ProcNull), or not sent when the transport declined (a synchronous send
// always is).
func (c *Comm) trySend(m Mem, dest, tag int, f Flags) (Op, bool, error) {
	if !c.valid(m, dest, tag, f) {
		if err := c.argErr(m, dest, tag, f); err != nil {
			return nil, false, err
		}
	}
	if dest == ProcNull {
		return nil, true, nil
	}
	if c.e.imm == nil || m.Kind != Host || f&Sync != 0 {
		return nil, false, nil
	}
	op, sent, err := c.e.imm.TrySend(c.WorldRank(dest), m, packTag(c.context(f), c.rank, tag))
	// The pass comes after the send, off the path a reply waits on (a
	// receive's comes before it: the receiver is about to wait anyway).
	c.e.passScheduler()
	if err != nil {
		return nil, false, &OpError{Op: f.name(), Class: ErrOther, Err: err}
	}
	return op, sent, nil
}

// TryRecvMax is the largest receive buffer an Immediate receive hands to
// the transport. A transport's immediate receive finishes any message it
// has matched before returning; with buffers this small only a message
// larger than the buffer (a truncation) can be long in arriving, since
// smaller ones travel eagerly in one piece.
const TryRecvMax = 4096

// tryRecv is an Immediate receive: ok when a message came (or src is
// ProcNull), with its status and outcome (a truncation).
func (c *Comm) tryRecv(m Mem, src, tag int, f Flags) (Status, bool, error) {
	if !c.valid(m, src, tag, f) {
		if err := c.argErr(m, src, tag, f); err != nil {
			return Status{}, false, err
		}
	}
	if src == ProcNull {
		return Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	if c.e.ir == nil || m.Kind != Host || m.Len > TryRecvMax {
		return Status{}, false, nil
	}
	c.e.passScheduler()
	t, mask := matchTag(c.context(f), src, tag)
	rv, ok, err := c.e.ir.TryRecv(m, t, mask)
	if err != nil {
		return Status{}, false, &OpError{Op: f.name(), Class: ErrOther, Err: err}
	}
	if !ok {
		return Status{}, false, nil
	}
	_, s, tg := unpackTag(rv.Tag)
	st := Status{Source: s, Tag: tg, Bytes: rv.Len}
	if rv.Truncated {
		return st, true, truncation(rv.Len, s, m.Len)
	}
	return st, true, nil
}

// CheckRecv reports the error a receive into m from src with tag would
// fail with before starting anything (nil when it would start): every
// receive path checks this way, and package mpi checks a Sendrecv's receive
// before its send leaves.
func (c *Comm) CheckRecv(name string, m Mem, src, tag int) error {
	return c.checkRecv(name, m, src, tag, c.ctx)
}

// checkRecv is CheckRecv on context ctx (see checkOn).
func (c *Comm) checkRecv(name string, m Mem, src, tag int, ctx uint32) error {
	if err := c.checkRecvArgs(name, src, tag, ctx); err != nil {
		return err
	}
	return c.checkMem(name, m)
}

// recv checks a receive's arguments and posts it; a nil Op without an
// error is a receive from ProcNull. A receive of Run lets the transport
// poll for the message in the same step when it can (Caps.BlockingRecv).
func (c *Comm) recv(m Mem, src, tag int, f Flags) (Op, error) {
	if !c.valid(m, src, tag, f) {
		if err := c.argErr(m, src, tag, f); err != nil {
			return nil, err
		}
	}
	if src == ProcNull {
		return nil, nil
	}
	c.e.passScheduler()
	t, mask := matchTag(c.context(f), src, tag)
	var op Op
	var err error
	if f&running != 0 && c.e.br != nil {
		op, err = c.e.br.RecvWait(m, t, mask)
	} else {
		op, err = c.e.t.Irecv(m, t, mask)
	}
	if err != nil {
		return nil, &OpError{Op: f.name(), Class: ErrOther, Err: err}
	}
	return op, nil
}
