package core

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// BsendOverhead is the room a buffered message takes in the attached
// buffer beyond its data (MPI_BSEND_OVERHEAD): a buffer of
// n*(size+BsendOverhead) bytes holds n messages of size bytes at once
// (sizes rounded up to 8 bytes).
const BsendOverhead = 64

// bsendSpan is one buffered send in flight: bytes [off, off+n) of the
// attached buffer, and its request.
type bsendSpan struct {
	off, n int
	req    *Request
}

// bsend is the process's attached buffer (MPI's is per process) and the
// buffered sends in it, sorted by offset. The buffer is pinned while
// attached: the transport may send from it after Bsend returns.
var bsend struct {
	mu       sync.Mutex
	attached bool
	buf      []byte
	pin      runtime.Pinner
	busy     []bsendSpan
	failed   []error // sends that failed after Bsend returned, for BufferDetach
}

// BufferAttach gives MPI buf for buffered sends (MPI_Buffer_attach). One
// buffer at a time: attaching a second, or a nil one, is an ErrBuffer.
func BufferAttach(buf []byte) error {
	bsend.mu.Lock()
	defer bsend.mu.Unlock()
	switch {
	case buf == nil:
		return &Error{Op: "buffer_attach", Class: ErrBuffer, Err: errors.New("nil buffer")}
	case bsend.attached:
		return &Error{Op: "buffer_attach", Class: ErrBuffer, Err: errors.New("a buffer is attached already (BufferDetach it first)")}
	}
	bsend.attached, bsend.buf = true, buf
	if len(buf) > 0 {
		bsend.pin.Pin(&buf[0])
	}
	return nil
}

// BufferDetach waits until every buffered send has left the attached
// buffer, then gives the buffer back (MPI_Buffer_detach). With no buffer
// attached it is an ErrBuffer. The errors of buffered sends that failed
// after Bsend returned come back here, joined.
func BufferDetach() ([]byte, error) {
	bsend.mu.Lock()
	defer bsend.mu.Unlock()
	if !bsend.attached {
		return nil, &Error{Op: "buffer_detach", Class: ErrBuffer, Err: errors.New("no buffer attached")}
	}
	waitBuffered()
	bsend.pin.Unpin()
	b, err := bsend.buf, errors.Join(bsend.failed...)
	bsend.attached, bsend.buf, bsend.failed = false, nil, nil
	return b, err
}

// waitBuffered waits for every buffered send. bsend.mu held.
func waitBuffered() {
	for _, s := range bsend.busy {
		if _, err := s.req.Wait(); err != nil {
			bsend.failed = append(bsend.failed, err)
		}
	}
	clear(bsend.busy)
	bsend.busy = bsend.busy[:0]
}

// drainBuffered waits for the buffered sends in flight (Finalize: they
// must reach their receivers, and MPI ends their requests).
func drainBuffered() {
	bsend.mu.Lock()
	waitBuffered()
	bsend.mu.Unlock()
}

// reapLocked frees the room of the buffered sends that have completed.
func reapLocked() {
	kept := bsend.busy[:0]
	for _, s := range bsend.busy {
		ok, _, err := s.req.Test()
		if err != nil {
			bsend.failed = append(bsend.failed, err)
		}
		if !ok && err == nil {
			kept = append(kept, s)
		}
	}
	clear(bsend.busy[len(kept):])
	bsend.busy = kept
}

// allocLocked finds room for need bytes (first fit) and returns its offset
// and its place in bsend.busy.
func allocLocked(need int) (off, at int, ok bool) {
	end := 0
	for i, s := range bsend.busy {
		if s.off-end >= need {
			return end, i, true
		}
		end = s.off + s.n
	}
	return end, len(bsend.busy), len(bsend.buf)-end >= need
}

// Bsend sends buf to dest in buffered mode (MPI_Bsend): the data is copied
// into the attached buffer and sent from there, so Bsend returns at once
// and buf is free. Without an attached buffer, or without room in it for
// the message, it is an ErrBuffer and nothing is sent.
func (c *Comm) Bsend(buf Buffer, dest, tag int) error {
	return c.bsend("bsend", buf, dest, tag)
}

// Ibsend is the nonblocking Bsend (MPI_Ibsend): the copy into the attached
// buffer is made at once, so the request it returns is complete (its first
// Wait or Test reports it).
func (c *Comm) Ibsend(buf Buffer, dest, tag int) (*Request, error) {
	if err := c.bsend("ibsend", buf, dest, tag); err != nil {
		return nil, err
	}
	return &Request{sched: copiedOut{}, life: c.life}, nil
}

// copiedOut drives an Ibsend's request: complete from the start, but
// active until the application waits for it or tests it (Waitany and
// Testany count it), as any request is.
type copiedOut struct{}

func (copiedOut) Test() (bool, error) { return true, nil }
func (copiedOut) Wait() error         { return nil }

func (c *Comm) bsend(op string, buf Buffer, dest, tag int) error {
	if err := c.check(op); err != nil {
		return err
	}
	if err := checkBuf(op, buf); err != nil {
		return err
	}
	n := bufBytes(buf)
	need := (n+7)&^7 + BsendOverhead
	bsend.mu.Lock()
	defer bsend.mu.Unlock()
	if !bsend.attached {
		return &Error{Op: op, Class: ErrBuffer, Err: errors.New("no buffer attached (BufferAttach)")}
	}
	reapLocked()
	off, at, ok := allocLocked(need)
	if !ok {
		return &Error{Op: op, Class: ErrBuffer, Err: fmt.Errorf("no room for a %d-byte message (%d bytes with BsendOverhead) in the attached buffer of %d bytes, %d sends in flight", n, need, len(bsend.buf), len(bsend.busy))}
	}
	data := bsend.buf[off : off+n : off+n]
	if err := copyOut(op, buf, data); err != nil {
		return err
	}
	req, err := c.isend(op, Slice(data), dest, tag, false)
	if err != nil {
		return err
	}
	bsend.busy = append(bsend.busy, bsendSpan{})
	copy(bsend.busy[at+1:], bsend.busy[at:])
	bsend.busy[at] = bsendSpan{off: off, n: need, req: req}
	return nil
}
