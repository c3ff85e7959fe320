package core

import (
	"encoding/binary"
	"fmt"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/pt2pt"
)

// CommCreate makes the communicator of group's members, in group's order
// (MPI_Comm_create). It is collective over all of c; every process passes
// a group of members of c, and processes that pass different groups pass
// disjoint ones (each then gets its own group's communicator); processes
// outside their group get nil.
func (c *Comm) CommCreate(group *Group) (*Comm, error) {
	const op = "comm create"
	if err := c.check(op); err != nil {
		return nil, err
	}
	ranks, err := c.groupRanks(op, group)
	if err != nil {
		return nil, err
	}
	// A group is named by its first member, the same on every member of a
	// group; members are keyed by their place in it.
	color, key := Undefined, 0
	if me := group.Rank(); me != Undefined {
		color, key = ranks[0], me
	}
	return c.Split(color, key)
}

// groupRanks returns the ranks in c of group's members, or an ErrGroup
// when one is not in c.
func (c *Comm) groupRanks(op string, group *Group) ([]int, error) {
	if group == nil {
		return nil, &Error{Op: op, Class: ErrGroup, Err: fmt.Errorf("nil group")}
	}
	in := map[int]int{}
	for r, w := range c.pc.WorldRanks() {
		in[w] = r
	}
	ranks := make([]int, len(group.world))
	for i, w := range group.world {
		r, ok := in[w]
		if !ok {
			return nil, &Error{Op: op, Class: ErrGroup, Err: fmt.Errorf("group member %d (world rank %d) is not in the communicator", i, w)}
		}
		ranks[i] = r
	}
	return ranks, nil
}

// MaxGroupTag is the largest tag CommCreateGroup takes.
const MaxGroupTag = coll.GroupTags - 1

// CommCreateGroup makes the communicator of group's members, in group's
// order (MPI_Comm_create_group). Unlike CommCreate it is collective only
// over the members, which all pass the same group and tag; concurrent
// creations over overlapping groups must differ in tag. The tag, in
// [0, MaxGroupTag], shares nothing with c's point-to-point tags.
func (c *Comm) CommCreateGroup(group *Group, tag int) (*Comm, error) {
	const op = "comm create group"
	if err := c.check(op); err != nil {
		return nil, err
	}
	if tag < 0 || tag > MaxGroupTag {
		return nil, &Error{Op: op, Class: ErrTag, Err: fmt.Errorf("tag %d outside [0,%d]", tag, MaxGroupTag)}
	}
	ranks, err := c.groupRanks(op, group)
	if err != nil {
		return nil, err
	}
	me := group.Rank()
	if me == Undefined {
		return nil, &Error{Op: op, Class: ErrGroup, Err: fmt.Errorf("the calling process is not in the group")}
	}
	s := sideChannel{pc: c.pc, ranks: ranks, me: me, tag: coll.GroupTagBase + tag}
	ctx, err := agreeContextBy(c.pc.Engine(), s.maxInts)
	if err != nil {
		return nil, err
	}
	pc, err := c.pc.Engine().NewComm(ctx, group.world)
	if err != nil {
		return nil, err
	}
	return c.derive(pc), nil
}

// sideChannel reduces small integer vectors over some ranks of a
// communicator with messages of one tag on its collective context, apart
// from its collective sequence: the members gather at the first, which
// sends back the maximum. Successive reductions keep their order (messages
// of one tag between two ranks are non-overtaking).
type sideChannel struct {
	pc    *pt2pt.Comm
	ranks []int // the members' ranks in pc; ranks[0] reduces
	me    int   // the calling process's index in ranks
	tag   int
}

func (s sideChannel) maxInts(vals ...int) ([]int, error) {
	buf := make([]byte, 8*len(vals))
	put := func(v []int) {
		for i, x := range v {
			binary.LittleEndian.PutUint64(buf[8*i:], uint64(int64(x)))
		}
	}
	msg := func(peer int, recv bool) error {
		f := pt2pt.Collective
		if recv {
			f |= pt2pt.Receive
		}
		_, _, err := s.pc.Run(pt2pt.Msg{Mem: pt2pt.HostMem(buf), Peer: peer, Tag: s.tag, Flags: f})
		return face(err)
	}
	if s.me != 0 {
		put(vals)
		if err := msg(s.ranks[0], false); err != nil {
			return nil, err
		}
		if err := msg(s.ranks[0], true); err != nil {
			return nil, err
		}
		return getInts(buf), nil
	}
	acc := append([]int(nil), vals...)
	for _, r := range s.ranks[1:] {
		if err := msg(r, true); err != nil {
			return nil, err
		}
		for i, x := range getInts(buf) {
			acc[i] = max(acc[i], x)
		}
	}
	put(acc)
	for _, r := range s.ranks[1:] {
		if err := msg(r, false); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func getInts(buf []byte) []int {
	out := make([]int, len(buf)/8)
	for i := range out {
		out[i] = int(int64(binary.LittleEndian.Uint64(buf[8*i:])))
	}
	return out
}

// Idup starts a Dup (MPI_Comm_idup): it returns the new communicator at
// once, usable when the request completes. It is ordered with c's other
// collectives as a collective call, and its agreement runs apart from
// them, so that they may be started meanwhile.
func (c *Comm) Idup() (*Comm, *Request, error) {
	const op = "comm idup"
	if err := c.checkColl(op); err != nil {
		return nil, nil, err
	}
	c.collMu.Lock()
	tag := c.engine().ReserveTag()
	c.collMu.Unlock()
	ranks := make([]int, c.Size())
	for i := range ranks {
		ranks[i] = i
	}
	s := sideChannel{pc: c.pc, ranks: ranks, me: c.Rank(), tag: tag}
	nc := &Comm{nodeID: c.nodeID, life: c.life}
	q := &idupReq{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		ctx, err := agreeContextBy(c.pc.Engine(), s.maxInts)
		if err == nil {
			nc.pc, err = c.pc.Engine().NewComm(ctx, c.pc.WorldRanks())
		}
		if err == nil {
			err = nc.inheritFrom(c)
		}
		q.err = renameErr(op, err)
	}()
	return nc, &Request{sched: q, life: c.life}, nil
}

// idupReq is an Idup in flight: its agreement runs in a goroutine, whose
// end (done closed) publishes the new communicator.
type idupReq struct {
	done chan struct{}
	err  error
}

func (q *idupReq) Test() (bool, error) {
	select {
	case <-q.done:
		return true, q.err
	default:
		return false, nil
	}
}

func (q *idupReq) Wait() error {
	<-q.done
	return q.err
}
