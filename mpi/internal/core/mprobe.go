package core

import (
	"errors"

	"github.com/gompix/gompix/pt2pt"
)

// Message is a message a matched probe (Mprobe, Improbe) took out of
// matching (MPI_Message): no receive or probe sees it any more, so two
// goroutines probing for one message cannot both get it, as they can with
// Probe then Recv. Receive it once, with Recv or Irecv, from any goroutine;
// a probe from ProcNull gives a message of no data from ProcNull
// (MPI_MESSAGE_NO_PROC).
type Message struct {
	m    *pt2pt.Message
	life *lifetime
}

// Mprobe blocks until a message from src (or AnySource) with tag (or
// AnyTag) is there, takes it out of matching and returns it with its status
// (use CountOf to size the buffer).
func (c *Comm) Mprobe(src, tag int) (*Message, Status, error) {
	if err := c.check("mprobe"); err != nil {
		return nil, Status{}, err
	}
	m, st, err := c.pc.Mprobe(src, tag)
	if err != nil {
		return nil, Status{}, face(err)
	}
	return &Message{m: m, life: c.life}, toStatus(st, 1), nil
}

// Improbe is the nonblocking Mprobe: it reports whether a message was
// there (and is now the returned one's).
func (c *Comm) Improbe(src, tag int) (*Message, Status, bool, error) {
	if err := c.check("improbe"); err != nil {
		return nil, Status{}, false, err
	}
	m, st, ok, err := c.pc.Improbe(src, tag)
	if err != nil || !ok {
		return nil, Status{}, false, face(err)
	}
	return &Message{m: m, life: c.life}, toStatus(st, 1), true, nil
}

// checkMsg is the error a receive of m fails with before anything else: a
// nil message, or MPI ended.
func (m *Message) checkMsg(op string, buf Buffer) error {
	if m == nil || m.m == nil {
		return &Error{Op: op, Class: ErrRequest, Err: errNilMessage}
	}
	if m.life.ended.Load() {
		return &Error{Op: op, Class: ErrNotInitialized}
	}
	return checkBuf(op, buf)
}

var errNilMessage = errors.New("nil message (MPI_MESSAGE_NULL)")

// Recv receives the message into buf (MPI_Mrecv). A message larger than buf
// fails with ErrTruncate, the status giving its real size; receiving a
// message twice is an ErrRequest.
func (m *Message) Recv(buf Buffer) (Status, error) {
	if err := m.checkMsg("mrecv", buf); err != nil {
		return Status{}, err
	}
	p := pinBuffers(buf)
	st, err := m.m.Recv(buf.mem())
	unpin(p)
	return toStatus(st, buf.Type().Size()), face(err)
}

// Irecv starts receiving the message into buf (MPI_Imrecv).
func (m *Message) Irecv(buf Buffer) (*Request, error) {
	if err := m.checkMsg("imrecv", buf); err != nil {
		return nil, err
	}
	if anyFreed.Load() {
		sweepFreed()
	}
	req := &Request{elemSize: buf.Type().Size(), p2p: true, life: m.life}
	req.pinner = pinBuffers(buf)
	if err := m.m.Post(buf.mem(), &req.r); err != nil {
		req.complete(pt2pt.Status{}, nil)
		return nil, face(err)
	}
	return req, nil
}
