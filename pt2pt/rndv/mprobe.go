package rndv

import (
	"errors"
	"fmt"

	"github.com/gompix/gompix/pt2pt"
)

// mmsg is the handle of a message the decorator's Improbe took out of
// matching: a plain message still in the wrapped transport, taken out of
// its matching there (in), or one taken off it (s, when taken: a
// descriptor, or plain data that was in the stash).
type mmsg struct {
	in    pt2pt.Matched
	s     stashed
	taken bool
}

// Improbe takes the first matching message out of matching
// (pt2pt.Caps.MatchedProbe, offered when the wrapped transport has it).
// The stash is ahead of the wrapped transport, so it is looked at first. A
// descriptor found in the wrapped transport is received at once (it is
// short and has arrived) for the size of the data it announces, which is
// what the probe reports; the data moves only at Mrecv, as for a receive.
// A probe or receive of another goroutine may be moving one sender's
// messages into the stash meanwhile; MPI orders no two calls of different
// threads, so a probe may then see them in either place.
func (t *Transport) Improbe(tag, mask uint64) (pt2pt.Matched, bool, error) {
	mask &^= pt2pt.DescriptorBit
	tag &= mask
	if t.nstash.Load() > 0 {
		if s, ok := t.takeStash(tag, mask); ok {
			return pt2pt.Matched{Tag: s.tag &^ pt2pt.DescriptorBit, Len: s.size, Handle: &mmsg{s: s, taken: true}}, true, nil
		}
	}
	in, ok, err := t.mp.Improbe(tag, mask)
	if err != nil || !ok {
		return pt2pt.Matched{}, false, err
	}
	if in.Tag&pt2pt.DescriptorBit == 0 {
		return pt2pt.Matched{Tag: in.Tag, Len: in.Len, Handle: &mmsg{in: in}}, true, nil
	}
	s := t.smalls.get()
	n, err := t.takeMatched(in, pt2pt.Mem{Ptr: s.mem(descSize), Len: descSize})
	if err != nil {
		t.smalls.put(s)
		return pt2pt.Matched{}, false, err
	}
	var d descriptor
	if err := d.decode(s.b[:n]); err != nil {
		t.smalls.put(s)
		return pt2pt.Matched{}, false, err
	}
	e := stashed{tag: in.Tag, size: d.size, small: s}
	return pt2pt.Matched{Tag: in.Tag &^ pt2pt.DescriptorBit, Len: d.size, Handle: &mmsg{s: e, taken: true}}, true, nil
}

// takeMatched receives the matched message in into m and waits for it,
// returning its length.
func (t *Transport) takeMatched(in pt2pt.Matched, m pt2pt.Mem) (int, error) {
	op, err := t.mp.Mrecv(in, m)
	if err != nil {
		return 0, err
	}
	for !op.Done() {
		if !t.inner.Progress() && !op.Done() {
			t.inner.Idle()
		}
	}
	res := op.Result()
	op.Release()
	if res.Err != nil || res.Cancelled || res.Truncated {
		return 0, fmt.Errorf("rndv: taking a probed descriptor: %+v", res)
	}
	return res.Len, nil
}

var errForeignMessage = errors.New("rndv: not a message this transport's Improbe returned")

// Mrecv receives a message Improbe took into m. A descriptor goes through
// the protocol as a receive's from the stash does. Plain data (never a
// descriptor now) lands in m itself when the wrapped transport moves m's
// memory; a device buffer it cannot move gets the data through pinned
// staging of the message's size, as a device receive's plain data does.
func (t *Transport) Mrecv(msg pt2pt.Matched, m pt2pt.Mem) (pt2pt.Op, error) {
	h, ok := msg.Handle.(*mmsg)
	if !ok {
		return nil, errForeignMessage
	}
	if m.Kind == pt2pt.Device && m.Len > 0 {
		if err := t.check(m); err != nil {
			return nil, err
		}
	}
	if h.taken {
		return t.recvStashed(m, h.s), nil
	}
	if m.Len == 0 || h.in.Len == 0 {
		return t.mp.Mrecv(h.in, pt2pt.Mem{})
	}
	if m.Kind != pt2pt.Device || t.directDev {
		return t.mp.Mrecv(h.in, m)
	}
	n := min(h.in.Len, m.Len)
	st, err := t.mv.Pin(m.Device, n)
	if err != nil {
		return nil, err
	}
	o := t.newOp(kindRecv)
	o.user, o.stage, o.stageLen, o.landing = m, st, n, st.Ptr
	if o.inner, err = t.mp.Mrecv(h.in, pt2pt.Mem{Ptr: st.Ptr, Len: n}); err != nil {
		o.inner = nil
		t.putOp(o)
		return nil, err
	}
	return o, nil
}
