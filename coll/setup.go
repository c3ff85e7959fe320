package coll

import (
	"errors"
	"runtime"
)

// Set-up exchanges for the engines that run beside the schedules (coll/gpu's
// IPC-direct engine, package mpi's shared-memory segment): blocking, small,
// on a tag the State reserved for the caller (ReserveTag), made by every
// rank at the same point of its collective sequence. They go through c
// directly rather than through the State's collectives, whose algorithm a
// GOMPIX_<COLL>_ALGORITHM might force elsewhere. Two exchanges in a row may
// share a tag: messages between two ranks do not overtake each other.

// SetupAllgather sends rec (the same length on every rank) to every rank
// of c and returns every rank's, by rank.
func SetupAllgather(c Comm, rec []byte, tag int) ([][]byte, error) {
	p, me := c.Size(), c.Rank()
	out := make([][]byte, p)
	out[me] = rec
	if len(rec) == 0 {
		for i := range out {
			out[i] = rec
		}
		return out, nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&rec[0])
	var reqs []Request
	for i := range p {
		if i == me {
			continue
		}
		out[i] = make([]byte, len(rec))
		pin.Pin(&out[i][0])
		q, err := c.Irecv(out[i], i, tag)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, q)
	}
	for i := range p {
		if i == me {
			continue
		}
		q, err := c.Isend(rec, i, tag)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, q)
	}
	var errs []error
	for _, q := range reqs {
		errs = append(errs, q.Wait())
	}
	return out, errors.Join(errs...)
}

// SetupAgree tells every rank of c whether every rank passed ok.
func SetupAgree(c Comm, ok bool, tag int) (bool, error) {
	all, err := SetupAgreeEach(c, []bool{ok}, tag)
	return err == nil && all[0], err
}

// SetupAgreeEach is SetupAgree for several questions at once, in one
// exchange: all[i] tells whether every rank passed oks[i]. Every rank must
// ask as many.
func SetupAgreeEach(c Comm, oks []bool, tag int) (all []bool, err error) {
	mine := make([]byte, len(oks))
	for i, ok := range oks {
		if ok {
			mine[i] = 1
		}
	}
	votes, err := SetupAllgather(c, mine, tag)
	if err != nil {
		return nil, err
	}
	all = make([]bool, len(oks))
	for i := range all {
		all[i] = true
		for _, v := range votes {
			all[i] = all[i] && len(v) == len(oks) && v[i] == 1
		}
	}
	return all, nil
}
