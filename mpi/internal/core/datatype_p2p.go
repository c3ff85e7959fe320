package core

import "github.com/gompix/gompix/pt2pt"

// Point-to-point operations on Views: a send packs the View into a staging
// buffer and sends that; a receive receives into a staging buffer and
// unpacks the bytes that came (a shorter message fills the first
// elements only), then counts elements of the View's datatype.

// sendBuf is the buffer a send hands the transport for b: b itself, or a
// View's packed data.
func sendBuf(b Buffer) Buffer {
	if v, ok := b.(*View); ok {
		return v.stage(true)
	}
	return b
}

// viewRecv is a receive into a View in flight: the staging buffer it
// lands in.
type viewRecv struct {
	v  *View
	st *packed
}

// finish unpacks a completed receive into the View and sets the status's
// count in elements of its datatype.
func (r *viewRecv) finish(s *Status, err error) {
	if err == nil && !s.Cancelled {
		r.v.unstage(r.st, s.Bytes)
	}
	s.Count = r.v.dt.Count(*s)
}

// recvView is RecvInto for a View.
func (c *Comm) recvView(s *Status, v *View, src, tag int) error {
	if err := v.checkRecv("recv"); err != nil {
		*s = Status{}
		return err
	}
	r := viewRecv{v, v.stage(false)}
	err := c.RecvInto(s, r.st, src, tag)
	r.finish(s, err)
	return err
}

// irecvView is irecv for a View: the Request unpacks when it completes.
func (c *Comm) irecvView(op string, v *View, src, tag int) (*Request, error) {
	if err := v.checkRecv(op); err != nil {
		return nil, err
	}
	r := &viewRecv{v, v.stage(false)}
	req, err := c.post(op, r.st, pt2pt.Msg{Peer: src, Tag: tag, Flags: pt2pt.Receive})
	if req != nil {
		req.view = r
	}
	return req, err
}

// sendrecvView is Sendrecv with a View to receive into (a View to send
// from is packed already).
func (c *Comm) sendrecvView(sendbuf Buffer, dest, sendtag int, v *View, src, recvtag int) (Status, error) {
	if err := v.checkRecv("sendrecv"); err != nil {
		return Status{}, err
	}
	r := viewRecv{v, v.stage(false)}
	s, err := c.Sendrecv(sendbuf, dest, sendtag, r.st, src, recvtag)
	r.finish(&s, err)
	return s, err
}
