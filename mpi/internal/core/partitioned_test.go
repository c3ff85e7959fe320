package core

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
)

func init() {
	scenarios["part-ring"] = partRing
}

// TestPartitioned: a ring of partitioned sends, the partitions readied in
// random order by several goroutines, the receiver cut differently and
// watching them arrive, many rounds with new contents.
func TestPartitioned(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("np", n), func(t *testing.T) { runInProc(t, n, partRing) })
	}
}

func partRing(w *Comm) error {
	p, me := w.Size(), w.Rank()
	right, left := (me+1)%p, (me+p-1)%p
	for _, c := range []struct{ sparts, rparts, per int }{{8, 4, 3}, {4, 8, 500}, {16, 16, 40000}, {1, 1, 0}} {
		n := c.sparts * c.per * 2
		out, in := make([]int32, n), make([]int32, n)
		sr, err := w.PsendInit(Slice(out), c.sparts, right, 3)
		if err != nil {
			return err
		}
		rr, err := w.PrecvInit(Slice(in), c.rparts, left, 3)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewSource(int64(me)))
		for round := range 8 {
			for i := range out {
				out[i] = int32(me<<24 | round<<16 | i)
			}
			clear(in)
			if err := Startall(rr, sr); err != nil {
				return err
			}
			if err := readyShuffled(sr, c.sparts, rng); err != nil {
				return err
			}
			if err := watchArrivals(rr, in, c.rparts, left, round); err != nil {
				return fmt.Errorf("%+v round %d: %w", c, round, err)
			}
			if _, err := Waitall(sr, rr); err != nil {
				return err
			}
		}
		sr.Free()
		rr.Free()
	}
	return nil
}

// readyShuffled readies the partitions in random order from 3 goroutines.
func readyShuffled(r *Request, parts int, rng *rand.Rand) error {
	order := rng.Perm(parts)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < parts; k += 3 {
				if err := r.Pready(order[k]); err != nil && errs[g] == nil {
					errs[g] = err
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// watchArrivals polls Parrived until every partition has come, checking
// each as it does.
func watchArrivals(r *Request, in []int32, parts, src, round int) error {
	per := len(in) / parts
	seen := make([]bool, parts)
	for left := parts; left > 0; {
		for j := range parts {
			if seen[j] {
				continue
			}
			ok, err := r.Parrived(j)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			seen[j] = true
			left--
			for i := j * per; i < (j+1)*per; i++ {
				if want := int32(src<<24 | round<<16 | i); in[i] != want {
					return errorf("partition %d: in[%d] = %#x, want %#x", j, i, in[i], want)
				}
			}
		}
	}
	return nil
}

// TestPartitionedMatchOrder: receives match sends by tag in init order,
// whatever order the rounds start in.
func TestPartitionedMatchOrder(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		tags := []int{5, 6, 5}
		bufs := make([][]int64, len(tags))
		reqs := make([]*Request, len(tags))
		for k := range tags {
			bufs[k] = make([]int64, 4)
		}
		if w.Rank() == 0 {
			for k, tag := range tags {
				for i := range bufs[k] {
					bufs[k][i] = int64(100*k + i)
				}
				r, err := w.PsendInit(Slice(bufs[k]), 2, 1, tag)
				if err != nil {
					return err
				}
				reqs[k] = r
			}
			// Started in reverse: matching is by init order.
			for k := len(reqs) - 1; k >= 0; k-- {
				if err := reqs[k].Start(); err != nil {
					return err
				}
				if err := reqs[k].PreadyRange(0, 1); err != nil {
					return err
				}
			}
		} else {
			// Receives made in another order of tags: 6 first.
			order := []int{1, 0, 2}
			for _, k := range order {
				r, err := w.PrecvInit(Slice(bufs[k]), 1, 0, tags[k])
				if err != nil {
					return err
				}
				reqs[k] = r
			}
			if err := Startall(reqs...); err != nil {
				return err
			}
		}
		if _, err := Waitall(reqs...); err != nil {
			return err
		}
		for k := range tags {
			if bufs[k][3] != int64(100*k+3) {
				return errorf("operation %d (tag %d) got %v", k, tags[k], bufs[k])
			}
			reqs[k].Free()
		}
		return nil
	})
}

// TestPartitionedMisuse: error classes of partitioned requests used
// wrongly.
func TestPartitionedMisuse(t *testing.T) {
	runInProc(t, 2, func(w *Comm) error {
		me, peer := w.Rank(), 1-w.Rank()
		buf := make([]float32, 12)
		if _, err := w.PsendInit(Slice(buf), 5, peer, 0); !isClass(err, ErrCount) {
			return errorf("12 elements in 5 partitions: %v, want ErrCount", err)
		}
		if _, err := w.PrecvInit(Slice(buf), 4, AnySource, 0); !isClass(err, ErrRank) {
			return errorf("PrecvInit from AnySource: %v, want ErrRank", err)
		}
		if _, err := w.PrecvInit(Slice(buf), 4, peer, AnyTag); !isClass(err, ErrTag) {
			return errorf("PrecvInit with AnyTag: %v, want ErrTag", err)
		}
		if me == 0 {
			r, err := w.PsendInit(Slice(buf), 4, peer, 1)
			if err != nil {
				return err
			}
			if err := r.Pready(0); !isClass(err, ErrRequest) {
				return errorf("Pready before Start: %v, want ErrRequest", err)
			}
			if err := r.Start(); err != nil {
				return err
			}
			if err := r.Start(); !isClass(err, ErrRequest) {
				return errorf("Start of an active send: %v, want ErrRequest", err)
			}
			if err := r.Pready(4); !isClass(err, ErrArg) {
				return errorf("Pready(4) of 4: %v, want ErrArg", err)
			}
			if err := r.PreadyList(2, 0); err != nil {
				return err
			}
			if err := r.Pready(2); !isClass(err, ErrRequest) {
				return errorf("Pready twice: %v, want ErrRequest", err)
			}
			if _, err := r.Parrived(0); !isClass(err, ErrRequest) {
				return errorf("Parrived on a send: %v, want ErrRequest", err)
			}
			if done, _, _ := r.Test(); done {
				return errorf("complete with partitions 1 and 3 not ready")
			}
			if err := r.PreadyRange(1, 3); err == nil {
				return errorf("PreadyRange over the ready partition 2 passed")
			}
			if err := r.Pready(3); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			r.Free()
			// A send of 8 elements to a receive of 12: the receive fails.
			s, err := w.PsendInit(Slice(buf[:8]), 2, peer, 2)
			if err != nil {
				return err
			}
			if err := s.Start(); err != nil {
				return err
			}
			if err := s.PreadyRange(0, 1); err != nil {
				return err
			}
			if _, err := s.Wait(); err != nil {
				return err
			}
			s.Free()
			return nil
		}
		r, err := w.PrecvInit(Slice(buf), 4, peer, 1)
		if err != nil {
			return err
		}
		if _, err := r.Parrived(0); !isClass(err, ErrRequest) {
			return errorf("Parrived before Start: %v, want ErrRequest", err)
		}
		if err := r.Start(); err != nil {
			return err
		}
		if _, err := r.Parrived(-1); !isClass(err, ErrArg) {
			return errorf("Parrived(-1): %v, want ErrArg", err)
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if ok, err := r.Parrived(3); !ok || err != nil {
			return errorf("Parrived after completion: %v %v", ok, err)
		}
		if err := r.Pready(0); !isClass(err, ErrRequest) {
			return errorf("Pready on a receive: %v, want ErrRequest", err)
		}
		r.Free()
		r2, err := w.PrecvInit(Slice(buf), 3, peer, 2)
		if err != nil {
			return err
		}
		if err := r2.Start(); err != nil {
			return err
		}
		if _, err := r2.Wait(); !isClass(err, ErrTruncate) {
			return errorf("8 elements into 12: %v, want ErrTruncate", err)
		}
		r2.Free()
		return nil
	})
}
