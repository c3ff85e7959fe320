package core

import (
	"fmt"

	"github.com/gompix/gompix/pt2pt"
)

// Collectives over an intercommunicator move data from one group to the
// other: a local step on each group's own communicator, and messages
// across on union's collective context, under a tag every process of both
// groups reserves from union's collective sequence (every process makes
// the same collective calls in the same order, as MPI requires).

// crossTag reserves the tag of one collective's messages across.
func (ic *Intercomm) crossTag() int {
	ic.union.collMu.Lock()
	defer ic.union.collMu.Unlock()
	return ic.union.engine().ReserveTag()
}

// cross posts a message of one collective across, to or from remote rank
// r.
func (ic *Intercomm) cross(op string, buf Buffer, r, tag int, recv bool) (*Request, error) {
	f := pt2pt.Collective
	if recv {
		f |= pt2pt.Receive
	}
	return ic.union.post(op, buf, pt2pt.Msg{Peer: ic.roff + r, Tag: tag, Flags: f})
}

// Barrier returns once every process of both groups has called it.
func (ic *Intercomm) Barrier() error { return ic.union.Barrier() }

// Bcast sends buf from the root to every process of the other group
// (MPI's intercommunicator broadcast): the root passes Root, the rest of
// its group ProcNull, and the other group the root's rank in the root's
// group.
func (ic *Intercomm) Bcast(buf Buffer, root int) error {
	const op = "intercomm bcast"
	if err := checkBuf(op, buf); err != nil {
		return err
	}
	if root != Root && root != ProcNull && (root < 0 || root >= ic.RemoteSize()) {
		return &Error{Op: op, Class: ErrRoot, Err: fmt.Errorf("root %d: neither Root, ProcNull nor a rank of the remote group [0,%d)", root, ic.RemoteSize())}
	}
	tag := ic.crossTag()
	switch {
	case root == ProcNull:
		return nil
	case root == Root:
		return block(ic.cross(op, buf, 0, tag, false))
	}
	if ic.Rank() == 0 {
		if err := block(ic.cross(op, buf, root, tag, true)); err != nil {
			return renameErr(op, err)
		}
	}
	return ic.local.Bcast(buf, 0)
}

// Allreduce gives every process of each group the reduction by op of the
// send buffers of the other group.
//
// Each group reduces at its rank 0 into that process's recv, which sends it
// across, while its rank 1 receives the other group's reduction (a group
// of one sends its send buffer and receives at rank 0), then broadcasts
// it: no process needs a buffer beyond its own two.
func (ic *Intercomm) Allreduce(send, recv Buffer, op Op) error {
	const name = "intercomm allreduce"
	if err := nbrArgs(name, send, recv); err != nil {
		return err
	}
	if send.Len() != recv.Len() {
		return countErr(name, "send buffer of %d, receive buffer of %d", send.Len(), recv.Len())
	}
	if err := op.check(name); err != nil {
		return err
	}
	tag := ic.crossTag()
	n, me := ic.Size(), ic.Rank()
	out := send
	if n > 1 {
		if err := ic.local.Reduce(send, recv, op, 0); err != nil {
			return err
		}
		out = recv
	}
	receiver, remoteReceiver := min(n-1, 1), min(ic.RemoteSize()-1, 1)
	var reqs []*Request
	if me == receiver {
		r, err := ic.cross(name, recv, 0, tag, true)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	if me == 0 {
		r, err := ic.cross(name, out, remoteReceiver, tag, false)
		if err != nil {
			Waitall(reqs...)
			return err
		}
		reqs = append(reqs, r)
	}
	if _, err := Waitall(reqs...); err != nil {
		return renameErr(name, err)
	}
	return ic.local.Bcast(recv, receiver)
}

// Allgather gives every process the send buffers of the other group's
// processes, in rank order, in recv (RemoteSize blocks of send's length).
// Every process sends its buffer to each remote one directly.
func (ic *Intercomm) Allgather(send, recv Buffer) error {
	const name = "intercomm allgather"
	if err := nbrArgs(name, send, recv); err != nil {
		return err
	}
	n := send.Len()
	if recv.Len() != n*ic.RemoteSize() {
		return countErr(name, "receive buffer of %d for %d remote processes of %d", recv.Len(), ic.RemoteSize(), n)
	}
	tag := ic.crossTag()
	reqs := make([]*Request, 0, 2*ic.RemoteSize())
	var err error
	for j := 0; j < ic.RemoteSize() && err == nil; j++ {
		var r *Request
		if r, err = ic.cross(name, recv.slice(j*n, n), j, tag, true); err == nil {
			reqs = append(reqs, r)
		}
	}
	for j := 0; j < ic.RemoteSize() && err == nil; j++ {
		var r *Request
		if r, err = ic.cross(name, send, j, tag, false); err == nil {
			reqs = append(reqs, r)
		}
	}
	_, werr := Waitall(reqs...)
	if err == nil {
		err = werr
	}
	return renameErr(name, err)
}
