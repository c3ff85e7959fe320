package core

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Root is MPI_ROOT: the root of an intercommunicator's Bcast passes it as
// root; the other processes of its group pass ProcNull.
const Root = -3

// Intercomm is an intercommunicator: two disjoint groups, local and
// remote, whose point-to-point calls address ranks of the remote group
// and whose collectives move data from one group to the other.
//
// Two communicators over both groups share one agreed context: p2p lists
// the local group first, so that a message carries its sender's local
// rank, which is what the receiver names it by (and Status.Source reports);
// union lists the group with the lowest world rank first on both sides, for
// the collectives' messages across (on its collective context only).
type Intercomm struct {
	p2p   *Comm
	union *Comm
	local *Comm // a duplicate of the local group's communicator
	// remote is the remote group's world ranks; roff is where they start
	// in union.
	remote []int
	roff   int
}

// IntercommCreate makes an intercommunicator from two disjoint groups
// (MPI_Intercomm_create): it is collective over c, the local group, and
// over the remote group's communicator, whose call names this one's
// leader. The leaders, localLeader in c and remoteLeader in peer (which
// holds both leaders; only the local leader's peer and remoteLeader are
// read), exchange the groups through peer with tag.
func (c *Comm) IntercommCreate(localLeader int, peer *Comm, remoteLeader, tag int) (*Intercomm, error) {
	const op = "intercomm create"
	if err := c.check(op); err != nil {
		return nil, err
	}
	if localLeader < 0 || localLeader >= c.Size() {
		return nil, rankErr(op, "local leader %d outside [0,%d)", localLeader, c.Size())
	}
	leader := c.Rank() == localLeader
	var leaderErr error // the leader's own arguments, which only it reads
	if leader {
		leaderErr = peer.check(op)
		if leaderErr == nil && (remoteLeader < 0 || remoteLeader >= peer.Size() || remoteLeader == peer.Rank()) {
			leaderErr = rankErr(op, "remote leader %d of a peer communicator of %d (this process is %d)", remoteLeader, peer.Size(), peer.Rank())
		}
	}
	// exchange swaps vals with the other leader and shares its answer
	// with the local group; a leader whose arguments are bad shares that
	// instead (-1), so that its group fails with it rather than waits.
	exchange := func(vals []int) ([]int, error) {
		n := []int{len(vals)}
		if leaderErr != nil {
			n[0] = -1
		} else if leader {
			got, err := leaderSwap(peer, remoteLeader, tag, n, 1)
			if err != nil {
				return nil, err
			}
			n = got
		}
		if err := c.bcastInts(n, localLeader); err != nil {
			return nil, err
		}
		if n[0] < 0 {
			if leaderErr != nil {
				return nil, leaderErr
			}
			return nil, rankErr(op, "the local leader's remote leader or peer communicator is invalid")
		}
		out := make([]int, n[0])
		if leader {
			got, err := leaderSwap(peer, remoteLeader, tag, vals, n[0])
			if err != nil {
				return nil, err
			}
			copy(out, got)
		}
		return out, c.bcastInts(out, localLeader)
	}
	remote, err := exchange(c.pc.WorldRanks())
	if err != nil {
		return nil, err
	}
	return c.joinGroups(op, remote, exchange)
}

// joinGroups agrees on the intercommunicator's context with the remote
// group (through exchange) and makes it.
func (c *Comm) joinGroups(op string, remote []int, exchange func([]int) ([]int, error)) (*Intercomm, error) {
	localWorld := c.pc.WorldRanks()
	for _, w := range remote {
		if slices.Contains(localWorld, w) {
			return nil, &Error{Op: op, Class: ErrGroup, Err: fmt.Errorf("world rank %d is in both groups", w)}
		}
	}
	ctx, err := agreeContextBy(c.pc.Engine(), func(vals ...int) ([]int, error) {
		mine, err := c.allreduceMaxInts(vals...)
		if err != nil {
			return nil, err
		}
		theirs, err := exchange(mine)
		if err != nil {
			return nil, err
		}
		for i := range mine {
			mine[i] = max(mine[i], theirs[i])
		}
		return mine, nil
	})
	if err != nil {
		return nil, err
	}
	e := c.pc.Engine()
	p2p, err := e.NewComm(ctx, append(slices.Clone(localWorld), remote...))
	if err != nil {
		return nil, err
	}
	ic := &Intercomm{remote: slices.Clone(remote)}
	unionWorld := append(slices.Clone(remote), localWorld...)
	if slices.Min(localWorld) < slices.Min(remote) {
		unionWorld = append(slices.Clone(localWorld), remote...)
		ic.roff = len(localWorld)
	}
	union, err := e.NewComm(ctx, unionWorld)
	if err != nil {
		return nil, err
	}
	ic.p2p, ic.union = c.derive(p2p), c.derive(union)
	if ic.local, err = c.sameGroup(); err != nil {
		return nil, err
	}
	return ic, nil
}

// leaderSwap sends vals to the other leader and returns the m values it
// sent.
func leaderSwap(peer *Comm, other, tag int, vals []int, m int) ([]int, error) {
	out := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(int64(v)))
	}
	in := make([]byte, 8*m)
	if _, err := peer.Sendrecv(Slice(out), other, tag, Slice(in), other, tag); err != nil {
		return nil, err
	}
	return getInts(in), nil
}

// bcastInts broadcasts vals from root over c.
func (c *Comm) bcastInts(vals []int, root int) error {
	b := make([]int64, len(vals))
	for i, v := range vals {
		b[i] = int64(v)
	}
	if err := c.Bcast(Slice(b), root); err != nil {
		return err
	}
	for i, v := range b {
		vals[i] = int(v)
	}
	return nil
}

// Rank is the calling process's rank in the local group.
func (ic *Intercomm) Rank() int { return ic.local.Rank() }

// Size is the size of the local group.
func (ic *Intercomm) Size() int { return ic.local.Size() }

// RemoteSize is the size of the remote group.
func (ic *Intercomm) RemoteSize() int { return len(ic.remote) }

// Group returns the local group.
func (ic *Intercomm) Group() *Group { return ic.local.Group() }

// RemoteGroup returns the remote group.
func (ic *Intercomm) RemoteGroup() *Group {
	return &Group{world: slices.Clone(ic.remote), me: ic.p2p.pc.WorldRank(ic.p2p.Rank())}
}

// peer maps a remote rank (or ProcNull, or AnySource for a receive) to
// p2p's rank; a rank outside the remote group is an ErrRank.
func (ic *Intercomm) peer(op string, r int, recv bool) (int, error) {
	switch {
	case r == ProcNull:
		return r, nil
	case recv && r == AnySource:
		return r, nil
	case r < 0 || r >= len(ic.remote):
		return 0, rankErr(op, "rank %d outside the remote group [0,%d)", r, len(ic.remote))
	case recv:
		return r, nil // a message carries its sender's local rank
	}
	return ic.local.Size() + r, nil
}

// Send sends buf to rank dest of the remote group.
func (ic *Intercomm) Send(buf Buffer, dest, tag int) error {
	d, err := ic.peer("send", dest, false)
	if err != nil {
		return err
	}
	return ic.p2p.Send(buf, d, tag)
}

// Recv receives from rank src of the remote group (or AnySource);
// Status.Source is a remote rank.
func (ic *Intercomm) Recv(buf Buffer, src, tag int) (Status, error) {
	s, err := ic.peer("recv", src, true)
	if err != nil {
		return Status{}, err
	}
	return ic.p2p.Recv(buf, s, tag)
}

// Isend starts a send to rank dest of the remote group.
func (ic *Intercomm) Isend(buf Buffer, dest, tag int) (*Request, error) {
	d, err := ic.peer("isend", dest, false)
	if err != nil {
		return nil, err
	}
	return ic.p2p.Isend(buf, d, tag)
}

// Irecv starts a receive from rank src of the remote group.
func (ic *Intercomm) Irecv(buf Buffer, src, tag int) (*Request, error) {
	s, err := ic.peer("irecv", src, true)
	if err != nil {
		return nil, err
	}
	return ic.p2p.Irecv(buf, s, tag)
}

// Sendrecv sends sendbuf to remote rank dest and receives into recvbuf
// from remote rank src, both at once.
func (ic *Intercomm) Sendrecv(sendbuf Buffer, dest, sendtag int, recvbuf Buffer, src, recvtag int) (Status, error) {
	d, err := ic.peer("sendrecv", dest, false)
	if err != nil {
		return Status{}, err
	}
	s, err := ic.peer("sendrecv", src, true)
	if err != nil {
		return Status{}, err
	}
	return ic.p2p.Sendrecv(sendbuf, d, sendtag, recvbuf, s, recvtag)
}

// Probe blocks until a message from remote rank src (or AnySource) with
// tag can be received and describes it.
func (ic *Intercomm) Probe(src, tag int) (Status, error) {
	s, err := ic.peer("probe", src, true)
	if err != nil {
		return Status{}, err
	}
	return ic.p2p.Probe(s, tag)
}

// Free frees the intercommunicator; collective over both groups.
func (ic *Intercomm) Free() error {
	err := ic.union.Free()
	if err == nil {
		err = ic.local.Free()
	}
	if err == nil {
		err = face(ic.p2p.pc.Free())
	}
	return err
}

// Merge makes the intracommunicator of both groups
// (MPI_Intercomm_merge): the group whose processes pass high false comes
// first; when both pass the same, the group with the lowest world rank
// does. Collective over both groups.
func (ic *Intercomm) Merge(high bool) (*Comm, error) {
	h := 0
	if high {
		h = 1
	}
	flags, err := ic.union.allgatherInts([]int{h})
	if err != nil {
		return nil, err
	}
	remoteHigh := flags[ic.roff] == 1
	first := ic.roff != 0 // this group is first in union
	if high != remoteHigh {
		first = !high
	}
	key := ic.Rank()
	if !first {
		key += len(ic.remote)
	}
	return ic.union.Split(0, key)
}
