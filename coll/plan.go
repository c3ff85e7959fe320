package coll

import (
	"fmt"
	"sync/atomic"

	"github.com/gompix/gompix/internal/dtype"
)

// A plan is a built schedule: the algorithm and its rounds. Steps name
// buffers symbolically (slots), so one plan serves every call of the same
// shape, whatever buffers it is given; a State keeps the plans of the calls
// it has seen so that a repeated collective (the common case: the same
// allreduce every iteration) skips selection and building, which cost about
// as much as a small message.
type plan struct {
	alg    Algorithm
	rounds []round
	tmp    int // scratch bytes

	// spare is scratch space of tmp bytes left by a finished call, for the
	// next one (calls in flight at once each take their own).
	spare atomic.Pointer[tmpBuf]
}

// tmpBuf holds one call's scratch space.
type tmpBuf struct{ b []byte }

// planKey is everything a cacheable call's schedule depends on besides the
// State's (rank, size, configuration): collectives whose per-rank counts
// all derive from one count.
type planKey struct {
	kind    Kind
	t       dtype.Type
	inPlace bool
	commute bool // the op commutes (selection and order of combination)
	avg     bool // the op is Avg (adds a scale step)
	count   int
	root    int
	device  bool // the device space (its own scratch memory and selection)
}

// matches reports whether k is the key of the call with these fields (in
// the device space when onDev). It compares field by field: building the
// call's key and comparing the two structs reads the key just written with
// loads wider than its stores, a store-forwarding stall (a tenth of the
// engine's own cost per blocking call, BenchmarkBlockingFixedCost).
func (k *planKey) matches(kind Kind, t dtype.Type, op Op, count, root int, inPlace, onDev bool) bool {
	return k.kind == kind && k.t == t && k.count == count && k.root == root &&
		k.inPlace == inPlace && k.device == onDev &&
		k.commute == op.IsCommutative() && k.avg == op.isAvg()
}

// repeat returns the plan of the State's last call of kind k when this call,
// its arguments checked, has the same key and runs where that one did: in
// the host space, off any stream, with a Mem that refuses no operation. A
// loop repeating one collective, the common case, then starts it without
// describing the call anew (newBuilder) and without start's selection
// steps: a sixth of the engine's own cost per blocking call
// (BenchmarkBlockingFixedCost). nil otherwise: the caller builds.
func (s *State) repeat(k Kind, t dtype.Type, op Op, count, root int, inPlace bool) *plan {
	if s.onDev || s.stream != 0 || s.hostCaps.ck != nil {
		return nil
	}
	if l := &s.last[k]; l.pl != nil && l.key.matches(k, t, op, count, root, inPlace, false) {
		return l.pl
	}
	return nil
}

// lastPlan is the plan a State used last for one collective: checked before
// the map, it spares a loop repeating the same calls the key's hashing.
type lastPlan struct {
	key planKey
	pl  *plan
}

// maxPlans bounds a State's plan cache; when it is full the cache starts
// over (a program cycling through more shapes than this pays the build).
const maxPlans = 64

// plan returns the schedule for the call described by b: from the cache when
// b.cache is set and the shape was seen before, else selected and built.
func (s *State) plan(b *builder, bytes int) (*plan, error) {
	var key planKey
	if b.cache {
		if l := &s.last[b.kind]; l.pl != nil && l.key.matches(b.kind, b.t, b.op, b.count, b.root, b.inPlace, s.onDev) {
			return l.pl, nil
		}
		key = planKey{kind: b.kind, t: b.t, inPlace: b.inPlace, commute: b.op.IsCommutative(),
			avg: b.op.isAvg(), count: b.count, root: b.root, device: s.onDev}
		if pl := s.plans[key]; pl != nil {
			s.last[b.kind] = lastPlan{key, pl}
			return pl, nil
		}
	}
	alg := s.cfg.choose(b.kind, bytes, b.size, b.op.IsCommutative())
	if alg.build == nil {
		return nil, fmt.Errorf("coll: %v: no algorithm", b.kind)
	}
	if b.blockCounts {
		b.setBlockCounts()
	}
	alg.build(b)
	pl := &plan{alg: alg, rounds: b.rounds, tmp: b.tmp}
	if b.cache {
		if len(s.plans) >= maxPlans {
			clear(s.plans)
			s.last = [numKinds]lastPlan{}
		}
		if s.plans == nil {
			s.plans = make(map[planKey]*plan)
		}
		s.plans[key] = pl
		s.last[b.kind] = lastPlan{key, pl}
	}
	return pl, nil
}

// setBlockCounts fills in the per-rank counts and displacements of the
// collectives whose blocks are all b.count elements (b.count in total for
// the reduce-scatters), which only a build needs.
func (b *builder) setBlockCounts() {
	p := b.size
	switch b.kind {
	case ReduceScatterBlock:
		b.counts, b.displs = uniform(b.count/max(1, p), p)
		b.displs = append(b.displs, b.count)
	default:
		b.counts, b.displs = uniform(b.count, p)
		if b.kind == Alltoall {
			b.sendCounts, b.sendDispls = b.counts, b.displs
		}
	}
}

// run starts pl on the given buffers.
func (s *State) run(pl *plan, op Op, t dtype.Type, send, recv []byte, tag int) (Request, error) {
	var e *exec
	if s.blocking && s.kept != nil {
		e, s.kept = s.kept, nil
	} else if e = s.spare.Swap(nil); e == nil {
		e = new(exec)
	}
	comm, mem := s.space()
	e.prog, e.pl, e.comm, e.mem, e.op, e.t, e.tag = s.prog, pl, comm, mem, op, t, tag
	e.caps = s.caps()
	e.bufs[slotSend], e.bufs[slotRecv], e.bufs[slotTmp] = send, recv, nil // not a literal: see newBuilder
	e.reqs = e.reqArr[:0]
	e.outside = s.blocking
	if pl.tmp > 0 {
		tb := pl.spare.Swap(nil)
		if tb == nil {
			buf, err := mem.Alloc(pl.tmp)
			if err != nil {
				return nil, fmt.Errorf("coll: %v: scratch: %w", pl.alg, err)
			}
			tb = &tmpBuf{buf}
		}
		e.tmp, e.bufs[slotTmp] = tb, tb.b
	}
	if len(pl.rounds) == 0 {
		e.finish()
		return e, nil
	}
	if s.blocking {
		return e, nil // joins the domain in Wait, if others are there
	}
	e.inDomain = true
	s.prog.add(e)
	return e, nil
}

// Release hands back r, a request this State returned, once it has
// completed without error and the caller keeps no other reference to it (a
// blocking collective that only waited on it): the State reuses its memory
// for a later collective. Releasing is optional; requests that are not
// released are left to the garbage collector. Safe to call concurrently
// with the State's methods.
func (s *State) Release(r Request) {
	e, ok := r.(*exec)
	if !ok {
		return
	}
	e.mu.Lock()
	reusable := e.done && e.err == nil && !e.inDomain
	if reusable {
		e.reset()
	}
	e.mu.Unlock()
	if reusable {
		s.spare.Store(e)
	}
}

// WaitRelease is Wait then Release, for a caller that drops r afterwards
// (a blocking collective): a schedule that completes without ever joining
// the progress domain is recycled under the lock its wait already holds,
// which spares the blocking call a second lock round trip.
func (s *State) WaitRelease(r Request) error { return s.waitRecycle(r, false) }

// WaitKeep is WaitRelease for a caller that keeps the State's other
// methods from running until it returns (package mpi holds a
// communicator's collective lock through a blocking host collective): a
// schedule recycled here is kept in a plain field for the next blocking
// call instead of spare. Spare's swap and store are locked instructions,
// each of which waits until the stores of the message just sent have
// drained from the processor (6 % of a 2-rank broadcast loop, session 9).
func (s *State) WaitKeep(r Request) error { return s.waitRecycle(r, true) }

// waitRecycle is WaitRelease (keep false) and WaitKeep.
func (s *State) waitRecycle(r Request, keep bool) error {
	e, ok := r.(*exec)
	if !ok {
		return r.Wait()
	}
	done, err, recycled := e.waitOutside(true)
	if recycled {
		if keep {
			s.kept = e
		} else {
			s.spare.Store(e)
		}
		return nil
	}
	if !done {
		err = e.Wait()
	}
	if err == nil {
		s.Release(e)
	}
	return err
}

// reset clears a finished schedule for reuse. e.mu is held, or e is
// unreachable from any other goroutine.
func (e *exec) reset() {
	e.pl, e.comm, e.caps, e.mem, e.op = nil, nil, nil, nil, Op{}
	// Slot by slot: clear() of an array holding pointers is a typed clear
	// through the runtime's write-barrier bookkeeping (see newBuilder).
	e.bufs[0], e.bufs[1], e.bufs[2], e.bufs[3] = nil, nil, nil, nil
	_ = [1]int{}[numSlots-4] // (numSlots is 4: the line above clears them all)
	e.cur, e.posted, e.done, e.reqs, e.outside = 0, false, false, nil, false
}
