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
// the device space when device). It compares field by field: building the
// call's key and comparing the two structs would read the key just written
// with loads wider than its stores, a store-forwarding stall on every call.
func (k *planKey) matches(kind Kind, t dtype.Type, op Op, count, root int, inPlace, device bool) bool {
	return k.kind == kind && k.t == t && k.count == count && k.root == root &&
		k.inPlace == inPlace && k.device == device &&
		k.commute == op.IsCommutative() && k.avg == op.isAvg()
}

// repeat returns the plan of the State's last call of kind k when this call,
// its arguments checked, has the same key and runs where that one did: in
// the host space, off any stream, with a Mem that refuses no operation. A
// loop repeating one collective, the common case, then starts it without
// describing the call anew (newBuilder) and without start's selection
// steps (BenchmarkBlockingFixedCost). nil otherwise: the caller builds.
func (s *State) repeat(c Call, k Kind, t dtype.Type, op Op, count, root int, inPlace bool) *plan {
	if c.Device || c.Stream != 0 || s.hostCaps.ck != nil {
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
func (s *State) plan(c Call, b *builder, bytes int) (*plan, error) {
	var key planKey
	if b.cache {
		if l := &s.last[b.kind]; l.pl != nil && l.key.matches(b.kind, b.t, b.op, b.count, b.root, b.inPlace, c.Device) {
			return l.pl, nil
		}
		key = planKey{kind: b.kind, t: b.t, inPlace: b.inPlace, commute: b.op.IsCommutative(),
			avg: b.op.isAvg(), count: b.count, root: b.root, device: c.Device}
		if pl := s.plans[key]; pl != nil {
			s.last[b.kind] = lastPlan{key, pl}
			return pl, nil
		}
	}
	alg := s.cfg.choose(b.kind, bytes, b.size, b.op.IsCommutative(), s.at)
	if alg.build == nil {
		return nil, fmt.Errorf("coll: %v: no algorithm", b.kind)
	}
	if !c.Device {
		b.seg = s.cfg.segment(b.kind, s.at)
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
func (s *State) run(c Call, pl *plan, op Op, t dtype.Type, send, recv []byte, tag int) (Request, error) {
	if s.rec != nil {
		return s.rec.record(pl, op, t, send, recv, tag)
	}
	var e *exec
	if c.Blocking && s.kept != nil {
		e, s.kept = s.kept, nil
	} else if e = s.spare.Swap(nil); e == nil {
		e = new(exec)
	}
	comm, mem := s.space(c)
	s.lastAlg = pl.alg.Name
	e.prog, e.pl, e.comm, e.mem, e.op, e.t, e.tag = s.prog, pl, comm, mem, op, t, tag
	e.caps = s.caps(c)
	e.bufs[slotSend], e.bufs[slotRecv], e.bufs[slotTmp] = send, recv, nil // not a literal: see newBuilder
	e.reqs = e.reqArr[:0]
	e.outside = c.Blocking
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
	if c.Blocking {
		return e, nil // joins the domain in Wait, if others are there
	}
	e.inDomain = true
	s.prog.add(e)
	return e, nil
}

// release takes back r, a request this State returned, once it has
// completed without error and nobody else holds it: its executor serves a
// later call. Safe to call concurrently with the State's methods.
func (s *State) release(r Request) {
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

// Wait completes r, a request this State returned, for a caller that drops
// it afterwards (a blocking call), and recycles its executor for a later
// call. err is the error of the call that returned r, returned as it is
// (so Wait(s.Bcast(…)) is a blocking broadcast). Safe to call concurrently
// with the State's other methods.
func (s *State) Wait(r Request, err error) error {
	if err != nil {
		return err
	}
	return s.waitRecycle(r, false)
}

// WaitKeep is Wait for a caller that keeps the State's other methods from
// running until it returns (package mpi holds a communicator's collective
// lock through a blocking host collective): the executor recycled here
// goes into a plain field for the next blocking call, which spares the
// locked instructions of the shared spare, each a wait for the stores of
// the message just sent to drain.
func (s *State) WaitKeep(r Request, err error) error {
	if err != nil {
		return err
	}
	return s.waitRecycle(r, true)
}

// waitRecycle is Wait (keep false) and WaitKeep.
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
		s.release(e)
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
