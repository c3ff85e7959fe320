package ucx

import (
	"fmt"

	"github.com/gompix/gompix/pt2pt"
	"github.com/gompix/gompix/ucxbind"
)

// Improbe takes the first matching unexpected message out of UCP's
// matching (ucp_tag_probe_nb with remove), for pt2pt.Caps.MatchedProbe. It
// does not progress the worker, as Iprobe does not: the engine progresses
// first.
func (t *Transport) Improbe(tag, mask uint64) (pt2pt.Matched, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return pt2pt.Matched{}, false, fmt.Errorf("ucx transport closed")
	}
	info, msg, ok := t.w.Probe(tag, mask, true)
	if !ok {
		return pt2pt.Matched{}, false, nil
	}
	return pt2pt.Matched{Tag: info.Tag, Len: info.Length, Handle: msg}, true, nil
}

// Mrecv receives a message Improbe took (ucp_tag_msg_recv_nbx), eager or
// by UCP's rendezvous alike.
func (t *Transport) Mrecv(msg pt2pt.Matched, m pt2pt.Mem) (pt2pt.Op, error) {
	h, ok := msg.Handle.(ucxbind.Message)
	if !ok {
		return nil, fmt.Errorf("ucx transport: %T is not a message its Improbe returned", msg.Handle)
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("ucx transport closed")
	}
	req, err := t.w.RecvMessage(h, m.Ptr, m.Len, hint(m))
	var o *op
	if err == nil {
		o = t.newOpLocked(req)
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return o, nil
}
