package inproc

import (
	"errors"

	"github.com/gompix/gompix/pt2pt"
)

// Improbe takes the first matching unexpected message off the rank's
// queue: no receive or probe sees it again (pt2pt.MatchedProber).
func (t *Transport) Improbe(tag, mask uint64) (pt2pt.Matched, bool, error) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.ranks[t.rank]
	for i, s := range ep.unexpected {
		if s.tag&mask == tag {
			ep.unexpected = append(ep.unexpected[:i], ep.unexpected[i+1:]...)
			return pt2pt.Matched{Tag: s.tag, Len: len(s.data), Handle: s}, true, nil
		}
	}
	return pt2pt.Matched{}, false, nil
}

var errForeignMessage = errors.New("inproc: not a message this fabric's Improbe returned")

// Mrecv delivers a message Improbe took into m, at once (the data is in
// the fabric already); a synchronous sender completes here.
func (t *Transport) Mrecv(msg pt2pt.Matched, m pt2pt.Mem) (pt2pt.Op, error) {
	s, ok := msg.Handle.(*op)
	if !ok || s.f != t.f || s.recv {
		return nil, errForeignMessage
	}
	f := t.f
	r := &op{f: f, owner: t.rank, recv: true, data: bytesOf(m)}
	f.mu.Lock()
	f.deliver(s, r)
	f.mu.Unlock()
	return r, nil
}
