package core

import (
	"fmt"

	"github.com/gompix/gompix/pt2pt"
)

// Neighbourhood collectives: each process sends a block to each of its
// topology's outgoing neighbours and receives one from each incoming one,
// as point-to-point messages on the communicator's collective context
// (device buffers go the way their point-to-point messages go). Their tags
// come from the communicator's collective sequence (coll's ReserveTag), so
// they never meet another collective's messages, and messages between two
// processes are told apart by the order MPI's neighbour lists give them,
// except along a Cartesian dimension, where the two neighbours may be one
// process: there a message also carries its direction (nbrTags). A
// ProcNull neighbour's block is neither sent nor touched.

// blocks are the regions of a buffer, one per neighbour, in elements.
type blocks struct{ off, n []int }

// evenBlocks is k consecutive blocks of n elements.
func evenBlocks(k, n int) blocks {
	b := blocks{off: make([]int, k), n: make([]int, k)}
	for i := range b.off {
		b.off[i], b.n[i] = i*n, n
	}
	return b
}

// sameBlocks is k blocks that are all of a buffer of n elements.
func sameBlocks(k, n int) blocks {
	b := blocks{off: make([]int, k), n: make([]int, k)}
	for i := range b.n {
		b.n[i] = n
	}
	return b
}

// vBlocks checks counts and displs (one per neighbour, of a buffer of
// size elements) and makes them blocks.
func vBlocks(op, side string, counts, displs []int, deg, size int) (blocks, error) {
	if len(counts) != deg || len(displs) != deg {
		return blocks{}, argErr(op, "%d %s counts and %d displacements for %d neighbours", len(counts), side, len(displs), deg)
	}
	for i := range counts {
		if counts[i] < 0 || displs[i] < 0 || displs[i] > size-counts[i] {
			return blocks{}, countErr(op, "%s block %d: [%d,%d+%d) outside a buffer of %d", side, i, displs[i], displs[i], counts[i], size)
		}
	}
	return blocks{off: displs, n: counts}, nil
}

// nbrDegrees returns c's neighbour lists, or the error of a communicator
// without a topology.
func (c *Comm) nbrDegrees(op string) (in, out []int, err error) {
	if err := c.checkColl(op); err != nil {
		return nil, nil, err
	}
	t := c.topoOf()
	if t == nil {
		return nil, nil, topoErr(op, "communicator has no topology")
	}
	in, out = t.neighbors()
	return in, out, nil
}

// nbrArgs checks the buffers every neighbourhood collective takes.
func nbrArgs(op string, send, recv Buffer) error {
	if err := checkBuf(op, send); err != nil {
		return err
	}
	if err := checkBuf(op, recv); err != nil {
		return err
	}
	if send.Type() != recv.Type() {
		return &Error{Op: op, Class: ErrType, Err: fmt.Errorf("send buffer of %v, receive buffer of %v", send.Type(), recv.Type())}
	}
	sm, rm := send.mem(), recv.mem()
	if overlap(sm.Ptr, sm.Len, rm.Ptr, rm.Len) {
		return &Error{Op: op, Class: ErrBuffer, Err: errOverlap}
	}
	return nil
}

// nbrTags returns the tags of the messages of one neighbourhood collective
// on c (c.collMu held): a Cartesian one sends down a dimension (even
// neighbour index) with down and up with up, and receives from below what
// that neighbour sent up.
func (c *Comm) nbrTags(directed bool) (down, up int) {
	st := c.engine()
	down = st.ReserveTag()
	up = down
	if directed {
		up = st.ReserveTag()
	}
	return down, up
}

// neighborStart posts the receives of recv's blocks from in and the sends
// of send's blocks to out, and returns the request that completes with all
// of them.
func (c *Comm) neighborStart(op string, in, out []int, send Buffer, sb blocks, recv Buffer, rb blocks) (*Request, error) {
	for i := range sb.n {
		if sb.off[i] < 0 || sb.n[i] < 0 || sb.off[i] > send.Len()-sb.n[i] {
			return nil, countErr(op, "send block %d: [%d,%d+%d) outside a buffer of %d", i, sb.off[i], sb.off[i], sb.n[i], send.Len())
		}
	}
	directed := c.topoOf().directed()
	reqs := make([]*Request, 0, len(in)+len(out))
	c.collMu.Lock()
	down, up := c.nbrTags(directed)
	var err error
	for k, peer := range in {
		tag := up
		if k%2 == 1 {
			tag = down
		}
		var r *Request
		r, err = c.post(op, recv.slice(rb.off[k], rb.n[k]), pt2pt.Msg{Peer: peer, Tag: tag, Flags: pt2pt.Receive | pt2pt.Collective})
		if err != nil {
			break
		}
		reqs = append(reqs, r)
	}
	for k, peer := range out {
		if err != nil {
			break
		}
		tag := down
		if k%2 == 1 {
			tag = up
		}
		var r *Request
		r, err = c.post(op, send.slice(sb.off[k], sb.n[k]), pt2pt.Msg{Peer: peer, Tag: tag, Flags: pt2pt.Collective})
		if err == nil {
			reqs = append(reqs, r)
		}
	}
	c.collMu.Unlock()
	if err != nil {
		// Nothing is left behind: receives are cancelled, sends complete.
		for _, r := range reqs {
			r.Cancel()
		}
		Waitall(reqs...)
		return nil, renameErr(op, err)
	}
	return &Request{sched: nbrReq{reqs: reqs, op: op}, life: c.life}, nil
}

// nbrReq is a neighbourhood collective in flight: its messages.
type nbrReq struct {
	reqs []*Request
	op   string
}

func (q nbrReq) Test() (bool, error) {
	ok, _, err := Testall(q.reqs...)
	return ok, renameErr(q.op, err)
}

func (q nbrReq) Wait() error {
	_, err := Waitall(q.reqs...)
	return renameErr(q.op, err)
}

// renameErr gives a message's error the collective's name.
func renameErr(op string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Op: op, Class: e.Class, Err: e.Err}
	}
	return err
}

func block(r *Request, err error) error {
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

// NeighborAllgather sends send to every outgoing neighbour and receives
// one block of send's length from each incoming neighbour into recv, in
// neighbour order (MPI_Neighbor_allgather).
func (c *Comm) NeighborAllgather(send, recv Buffer) error {
	return block(c.IneighborAllgather(send, recv))
}

// IneighborAllgather starts a NeighborAllgather.
func (c *Comm) IneighborAllgather(send, recv Buffer) (*Request, error) {
	const op = "neighbor allgather"
	in, out, err := c.nbrDegrees(op)
	if err != nil {
		return nil, err
	}
	if err := nbrArgs(op, send, recv); err != nil {
		return nil, err
	}
	n := send.Len()
	if recv.Len() != n*len(in) {
		return nil, countErr(op, "receive buffer of %d for %d neighbours of %d", recv.Len(), len(in), n)
	}
	return c.neighborStart(op, in, out, send, sameBlocks(len(out), n), recv, evenBlocks(len(in), n))
}

// NeighborAllgatherv is NeighborAllgather with the block from incoming
// neighbour i of counts[i] elements, placed at displs[i] in recv.
func (c *Comm) NeighborAllgatherv(send, recv Buffer, counts, displs []int) error {
	return block(c.IneighborAllgatherv(send, recv, counts, displs))
}

// IneighborAllgatherv starts a NeighborAllgatherv.
func (c *Comm) IneighborAllgatherv(send, recv Buffer, counts, displs []int) (*Request, error) {
	const op = "neighbor allgatherv"
	in, out, err := c.nbrDegrees(op)
	if err != nil {
		return nil, err
	}
	if err := nbrArgs(op, send, recv); err != nil {
		return nil, err
	}
	rb, err := vBlocks(op, "receive", counts, displs, len(in), recv.Len())
	if err != nil {
		return nil, err
	}
	return c.neighborStart(op, in, out, send, sameBlocks(len(out), send.Len()), recv, rb)
}

// NeighborAlltoall sends block i of send to outgoing neighbour i and
// receives block i of recv from incoming neighbour i; all blocks have one
// size (MPI_Neighbor_alltoall).
func (c *Comm) NeighborAlltoall(send, recv Buffer) error {
	return block(c.IneighborAlltoall(send, recv))
}

// IneighborAlltoall starts a NeighborAlltoall.
func (c *Comm) IneighborAlltoall(send, recv Buffer) (*Request, error) {
	const op = "neighbor alltoall"
	in, out, err := c.nbrDegrees(op)
	if err != nil {
		return nil, err
	}
	if err := nbrArgs(op, send, recv); err != nil {
		return nil, err
	}
	n, err := alltoallBlock(op, send.Len(), len(out), recv.Len(), len(in))
	if err != nil {
		return nil, err
	}
	return c.neighborStart(op, in, out, send, evenBlocks(len(out), n), recv, evenBlocks(len(in), n))
}

// alltoallBlock is the block size of a NeighborAlltoall: the buffers split
// evenly over their neighbours, into blocks of one size.
func alltoallBlock(op string, sendLen, outdeg, recvLen, indeg int) (int, error) {
	n, m := -1, -1
	if outdeg > 0 {
		n = sendLen / outdeg
		if sendLen%outdeg != 0 {
			return 0, countErr(op, "send buffer of %d for %d neighbours", sendLen, outdeg)
		}
	}
	if indeg > 0 {
		m = recvLen / indeg
		if recvLen%indeg != 0 {
			return 0, countErr(op, "receive buffer of %d for %d neighbours", recvLen, indeg)
		}
	}
	if n >= 0 && m >= 0 && n != m {
		return 0, countErr(op, "send blocks of %d, receive blocks of %d", n, m)
	}
	return max(n, m, 0), nil
}

// NeighborAlltoallv is NeighborAlltoall with blocks of their own sizes and
// places: sendCounts[i] elements at sendDispls[i] go to outgoing neighbour
// i, recvCounts[i] elements from incoming neighbour i land at
// recvDispls[i].
func (c *Comm) NeighborAlltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) error {
	return block(c.IneighborAlltoallv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls))
}

// IneighborAlltoallv starts a NeighborAlltoallv.
func (c *Comm) IneighborAlltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	const op = "neighbor alltoallv"
	in, out, err := c.nbrDegrees(op)
	if err != nil {
		return nil, err
	}
	if err := nbrArgs(op, send, recv); err != nil {
		return nil, err
	}
	sb, err := vBlocks(op, "send", sendCounts, sendDispls, len(out), send.Len())
	if err != nil {
		return nil, err
	}
	rb, err := vBlocks(op, "receive", recvCounts, recvDispls, len(in), recv.Len())
	if err != nil {
		return nil, err
	}
	return c.neighborStart(op, in, out, send, sb, recv, rb)
}
