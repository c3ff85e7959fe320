package pt2pt

import "sync/atomic"

// MatchedProber (Caps.MatchedProbe) takes a probed message out of matching,
// as MPI_Mprobe does: once Improbe has returned a message, no receive or
// probe matches it any more, so two goroutines probing for one message
// cannot both get it (with Iprobe then Irecv they can, and the second
// receive takes a different message or waits for ever).
type MatchedProber interface {
	// Improbe finds the first message matching tag in the bits of mask,
	// as Iprobe does, and takes it out of matching.
	Improbe(tag, mask uint64) (Matched, bool, error)
	// Mrecv receives msg, which Improbe on this transport returned, into
	// m. Each Matched is received exactly once; the Op reports it as a
	// receive's does (tag, real length, truncation).
	Mrecv(msg Matched, m Mem) (Op, error)
}

// Matched is a message a matched probe took out of matching.
type Matched struct {
	Tag    uint64 // the sender's transport tag, DescriptorBit clear
	Len    int    // the message's length
	Handle any    // the transport's own reference to the message
}

// Message is a message Comm.Mprobe or Comm.Improbe took out of matching
// (MPI_Message). Receive it once, with Recv or Post, from any goroutine.
type Message struct {
	c      *Comm
	m      Matched
	status Status
	noProc bool        // probed from ProcNull (MPI_MESSAGE_NO_PROC)
	taken  atomic.Bool // Recv or Post has had it
}

// Status describes the message as the probe found it.
func (msg *Message) Status() Status { return msg.status }

// Improbe looks for a message from src (or AnySource) with tag (or AnyTag)
// and, when there is one, takes it out of matching and returns it. A probe
// from ProcNull finds at once a message of no data from ProcNull.
func (c *Comm) Improbe(src, tag int) (*Message, Status, bool, error) {
	if err := c.checkRecvArgs("improbe", src, tag, c.ctx); err != nil {
		return nil, Status{}, false, err
	}
	if src == ProcNull {
		st := Status{Source: ProcNull, Tag: AnyTag}
		return &Message{c: c, status: st, noProc: true}, st, true, nil
	}
	if c.e.mp == nil {
		return nil, Status{}, false, opErr("improbe", ErrOther, "the transport cannot take a probed message out of matching")
	}
	t, mask := matchTag(c.ctx, src, tag)
	c.e.t.Progress()
	mm, ok, err := c.e.mp.Improbe(t, mask)
	if err != nil {
		return nil, Status{}, false, &OpError{Op: "improbe", Class: ErrOther, Err: err}
	}
	if !ok {
		return nil, Status{}, false, nil
	}
	_, s, tg := unpackTag(mm.Tag)
	st := Status{Source: s, Tag: tg, Bytes: mm.Len}
	return &Message{c: c, m: mm, status: st}, st, true, nil
}

// Mprobe blocks until a message from src with tag is there, and takes it
// out of matching (Improbe).
func (c *Comm) Mprobe(src, tag int) (*Message, Status, error) {
	for i := 0; ; i++ {
		msg, st, ok, err := c.Improbe(src, tag)
		if err != nil || ok {
			return msg, st, err
		}
		c.e.Idle(i)
	}
}

// Post starts receiving msg into m, in r (MPI_Imrecv). A bad buffer is
// refused before the message is touched, which stays receivable; a
// message received already (or a nil one) is an ErrRequest.
func (msg *Message) Post(m Mem, r *Request) error {
	const name = "imrecv"
	if msg == nil {
		return opErr(name, ErrRequest, "nil message")
	}
	if err := msg.c.checkMem(name, m); err != nil {
		return err
	}
	if !msg.taken.CompareAndSwap(false, true) {
		return opErr(name, ErrRequest, "message received already")
	}
	r.op, r.comm, r.err = nil, msg.c, nil
	r.bufLen, r.status, r.recv, r.done = m.Len, Status{}, true, false
	if msg.noProc {
		r.done, r.status = true, msg.status
		return nil
	}
	op, err := msg.c.e.mp.Mrecv(msg.m, m)
	if err != nil {
		r.comm = nil
		return &OpError{Op: name, Class: ErrOther, Err: err}
	}
	r.op = op
	return nil
}

// Recv receives msg into m (MPI_Mrecv): Post, then Wait.
func (msg *Message) Recv(m Mem) (Status, error) {
	var r Request
	if err := msg.Post(m, &r); err != nil {
		return Status{}, err
	}
	return r.Wait()
}
