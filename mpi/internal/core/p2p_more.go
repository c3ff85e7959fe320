package core

import (
	"errors"
)

// SendrecvReplace sends buf to dest and receives into buf from src
// (MPI_Sendrecv_replace). The outgoing data is copied aside first (device
// buffers through host memory), so the incoming message may land in buf
// while the outgoing one is still on its way; a message larger than buf
// fails with ErrTruncate.
func (c *Comm) SendrecvReplace(buf Buffer, dest, sendtag, src, recvtag int) (Status, error) {
	const op = "sendrecv_replace"
	if err := c.check(op); err != nil {
		return Status{}, err
	}
	if err := checkBuf(op, buf); err != nil {
		return Status{}, err
	}
	out := make([]byte, bufBytes(buf))
	if err := copyOut(op, buf, out); err != nil {
		return Status{}, err
	}
	return c.Sendrecv(Slice(out), dest, sendtag, buf, src, recvtag)
}

// Rsend sends in ready mode (MPI_Rsend): the caller promises that the
// matching receive is posted. gompix gains nothing from the promise and
// sends as Send does, which MPI allows.
func (c *Comm) Rsend(buf Buffer, dest, tag int) error { return c.Send(buf, dest, tag) }

// Irsend starts a ready-mode send (MPI_Irsend), as Isend.
func (c *Comm) Irsend(buf Buffer, dest, tag int) (*Request, error) {
	return c.isend("irsend", buf, dest, tag, false)
}

// active reports whether r is an active request: not nil, and not
// completed and reported already.
func active(r *Request) bool { return r != nil && !r.done }

// Testany tests the active requests once each, in order, and reports the
// first that has completed: its index, true, its status and error. With no
// active request it reports -1 and true (MPI_UNDEFINED, flag true); with
// none completed, -1 and false.
func Testany(rs ...*Request) (int, bool, Status, error) {
	some := false
	for i, r := range rs {
		if !active(r) {
			continue
		}
		some = true
		ok, st, err := r.Test()
		if ok || err != nil {
			return i, true, st, err
		}
	}
	return -1, !some, Status{}, nil
}

// Waitsome waits until at least one active request has completed and
// reports every one that has by then: their indices in rs, their statuses,
// and their errors joined. With no active request the indices are nil
// (MPI_UNDEFINED).
func Waitsome(rs ...*Request) ([]int, []Status, error) {
	i, st, err := Waitany(rs...)
	if i < 0 {
		return nil, nil, err
	}
	if !rs[i].done { // MPI has ended (Waitany's error): nothing else completes
		return []int{i}, []Status{st}, err
	}
	idx, sts, errs := testRest(rs, []int{i}, []Status{st}, []error{err})
	return idx, sts, errors.Join(errs...)
}

// Testsome tests every active request once and reports those that have
// completed, as Waitsome does, without waiting: the indices are empty (not
// nil) when requests are active but none has completed, nil when none is
// active.
func Testsome(rs ...*Request) ([]int, []Status, error) {
	some := false
	for _, r := range rs {
		if active(r) {
			some = true
			break
		}
	}
	if !some {
		return nil, nil, nil
	}
	idx, sts, errs := testRest(rs, []int{}, nil, nil)
	return idx, sts, errors.Join(errs...)
}

// testRest tests the active requests of rs once each and appends the
// completed ones to idx, sts and errs.
func testRest(rs []*Request, idx []int, sts []Status, errs []error) ([]int, []Status, []error) {
	for j, r := range rs {
		if !active(r) {
			continue
		}
		ok, st, err := r.Test()
		if ok || err != nil {
			idx, sts, errs = append(idx, j), append(sts, st), append(errs, err)
		}
	}
	return idx, sts, errs
}
