package coll

import "testing"

// doneReq is a request complete from the start.
type doneReq struct{}

func (doneReq) Test() (bool, error) { return true, nil }
func (doneReq) Wait() error         { return nil }

// doneComm is rank 0 of 8 whose messages complete at once.
type doneComm struct{ nullComm }

func (doneComm) Size() int                                        { return 8 }
func (doneComm) Isend(buf []byte, dest, tag int) (Request, error) { return doneReq{}, nil }
func (doneComm) Irecv(buf []byte, src, tag int) (Request, error)  { return doneReq{}, nil }

// TestReqArrNilAfterBigRound: a round of more messages than reqArr holds,
// posted without immediate receives (a nonblocking call, or a Comm without
// them, as device memory's), leaves reqArr all nil once the schedule
// finishes. The immediate path of the exec's next use takes reqArr's entries
// for nil; a stale one there was a request already released, which the next
// blocking collective then tested (a nil dereference in package mpi).
func TestReqArrNilAfterBigRound(t *testing.T) {
	var comm []step
	for p := 1; p < 4; p++ {
		comm = append(comm, step{kind: stepSend, peer: p}, step{kind: stepRecv, peer: p})
	}
	e := &exec{pl: &plan{rounds: []round{{comm: comm}}}, comm: doneComm{}, caps: &spaceCaps{}}
	e.reqs = e.reqArr[:0]
	done, err := e.advance(true)
	if !done || err != nil {
		t.Fatalf("advance: done %v, %v", done, err)
	}
	for i, q := range e.reqArr {
		if q != nil {
			t.Errorf("reqArr[%d] = %v after the schedule finished, want nil", i, q)
		}
	}
}
