package core

import (
	"fmt"

	"github.com/gompix/gompix/pt2pt"
)

// Alltoallw sends send[j] to rank j and receives from rank i into recv[i]
// (MPI_Alltoallw): each peer's buffer has its own type, length and memory
// (host or device), which the per-peer buffers carry in place of MPI's
// types and byte displacements. Each list has one buffer per rank (else
// ErrCount). A message larger than its receive buffer is an ErrTruncate; a
// shorter one is received as it is. Like every collective, all ranks call
// it, and collectives on one communicator are ordered.
func (c *Comm) Alltoallw(send, recv []Buffer) error {
	const name = "alltoallw"
	if err := c.checkColl(name); err != nil {
		return err
	}
	n := c.Size()
	if len(send) != n || len(recv) != n {
		return &Error{Op: name, Class: ErrCount, Err: fmt.Errorf("%d send and %d receive buffers on %d ranks", len(send), len(recv), n)}
	}
	for i := range n {
		if err := checkBuf(name, send[i]); err != nil {
			return err
		}
		if err := checkBuf(name, recv[i]); err != nil {
			return err
		}
	}
	c.collMu.Lock()
	defer c.collMu.Unlock()
	tag := c.engine().ReserveTag()
	p := pinBuffers(append(append([]Buffer(nil), send...), recv...)...)
	defer unpin(p)
	me := c.Rank()
	reqs := make([]pt2pt.Request, 2*n)
	var errs []error
	for k := 1; k < n; k++ { // receives first, then sends, each from the next rank on
		i := (me + k) % n
		m := pt2pt.Msg{Mem: recv[i].mem(), Peer: i, Tag: tag, Flags: pt2pt.Receive | pt2pt.Collective}
		errs = append(errs, c.pc.Post(m, &reqs[i]))
	}
	for k := 1; k < n; k++ {
		j := (me + k) % n
		m := pt2pt.Msg{Mem: send[j].mem(), Peer: j, Tag: tag, Flags: pt2pt.Collective}
		errs = append(errs, c.pc.Post(m, &reqs[n+j]))
	}
	errs = append(errs, selfCopy(name, send[me], recv[me]))
	for i := range reqs {
		if reqs[i].Posted() {
			_, err := reqs[i].Wait()
			errs = append(errs, err)
		}
	}
	for _, err := range errs {
		if err != nil {
			return face(err)
		}
	}
	return nil
}

// selfCopy is Alltoallw's message from a rank to itself.
func selfCopy(name string, send, recv Buffer) error {
	ns, nr := bufBytes(send), bufBytes(recv)
	if ns > nr {
		return &Error{Op: name, Class: ErrTruncate, Err: fmt.Errorf("message of %d bytes from this rank, buffer of %d bytes", ns, nr)}
	}
	if sm, rm := send.mem(), recv.mem(); sm.Kind == pt2pt.Host && rm.Kind == pt2pt.Host {
		copy(recv.hostBytes(), send.hostBytes())
		return nil
	}
	tmp := make([]byte, ns)
	if err := copyOut(name, send, tmp); err != nil {
		return err
	}
	if ns == 0 {
		return nil
	}
	return copyIn(name, recv, tmp)
}
