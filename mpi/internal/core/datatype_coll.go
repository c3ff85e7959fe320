package core

import (
	"fmt"

	"github.com/gompix/gompix/coll"
)

// Collectives on Views: each View argument is replaced by a staging buffer
// of its packed data, typed with the datatype's basic type, and the
// counts and displacements that go with it (in elements of the datatype)
// are scaled to that type's elements; the collective runs on the staging
// buffers, and the Views it writes are unpacked when it completes. A View
// written by the collective is packed first as well, so that what the
// collective leaves alone (gaps between Gatherv's blocks, Exscan's rank 0,
// an InPlace contribution) comes back unchanged.
//
// Each collective's View path is a function of its own below, so that the
// arguments it takes the address of are copies: taken in the collective
// itself, they would move to the heap on every call.

// viewArg is a collective's buffer argument that may be a View.
type viewArg struct {
	b      *Buffer
	counts []*[]int // counts and displacements in elements of *b
	out    bool     // the collective writes *b
}

// anyView reports whether a or b is a View.
func anyView(a, b Buffer) bool {
	_, va := a.(*View)
	_, vb := b.(*View)
	return va || vb
}

// viewColl stages the View arguments of a collective and runs it (run
// sees the staged arguments); reduce says it reduces, which needs one
// basic type.
func (c *Comm) viewColl(m call, name string, reduce bool, args []viewArg, run func(m call) (*Request, error)) (*Request, error) {
	if m.stream != 0 {
		return nil, coll.ErrNotOnStream // host memory: the stream engine's path
	}
	var outs []viewRecv
	for _, a := range args {
		v, ok := (*a.b).(*View)
		if !ok {
			continue
		}
		if a.out {
			if err := v.checkRecv(name); err != nil {
				return nil, err
			}
		}
		if _, one := v.dt.l.Elem(); reduce && !one {
			return nil, &Error{Op: name, Class: ErrType, Err: fmt.Errorf("reduction on datatype %v, which mixes basic types", v.dt)}
		}
		p := v.stage(true)
		*a.b = p
		k := v.dt.Size() / max(p.t.Size(), 1)
		for _, cs := range a.counts {
			*cs = scaled(*cs, k)
		}
		if a.out {
			outs = append(outs, viewRecv{v, p})
		}
	}
	unpack := func() {
		for _, o := range outs {
			o.v.unstage(o.st, len(o.st.b))
		}
	}
	r, err := run(m)
	switch {
	case err != nil:
		return nil, err
	case r == nil: // blocking: complete
		unpack()
		return nil, nil
	case len(outs) > 0:
		r.sched = &viewSched{r: r.sched, unpack: unpack}
	}
	return r, nil
}

// scaled is counts (or displacements) in elements of a datatype of k basic
// elements, in basic elements.
func scaled(cs []int, k int) []int {
	if cs == nil || k == 1 {
		return cs
	}
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c * k
	}
	return out
}

// viewSched is a nonblocking collective that unpacks its Views on success.
type viewSched struct {
	r      collRequest
	unpack func()
}

func (w *viewSched) Test() (bool, error) {
	ok, err := w.r.Test()
	if ok && err == nil {
		w.unpack()
	}
	return ok, err
}

func (w *viewSched) Wait() error {
	err := w.r.Wait()
	if err == nil {
		w.unpack()
	}
	return err
}

func (c *Comm) bcastViews(m call, buf Buffer, root int) (*Request, error) {
	return c.viewColl(m, "bcast", false, []viewArg{{b: &buf, out: c.Rank() != root}},
		func(m call) (*Request, error) { return c.ibcast(m, buf, root) })
}

// reduceViews stages a reduction's two buffers; recvOut says whether this
// rank receives a result. run starts the reduction on the staged buffers.
func (c *Comm) reduceViews(m call, name string, send, recv Buffer, recvOut bool, counts *[]int,
	run func(m call, send, recv Buffer) (*Request, error)) (*Request, error) {
	sa, ra := viewArg{b: &send}, viewArg{b: &recv, out: recvOut}
	if counts != nil {
		// ReduceScatter's counts are in elements of the receive buffer's
		// datatype (the send buffer's when only it is a View).
		if _, ok := recv.(*View); ok {
			ra.counts = []*[]int{counts}
		} else {
			sa.counts = []*[]int{counts}
		}
	}
	return c.viewColl(m, name, true, []viewArg{sa, ra}, func(m call) (*Request, error) { return run(m, send, recv) })
}

// pairViews stages a collective's send and receive buffers, with the
// counts and displacements of each.
func (c *Comm) pairViews(m call, name string, send, recv Buffer, recvOut bool, sendCounts, recvCounts []*[]int,
	run func(m call, send, recv Buffer) (*Request, error)) (*Request, error) {
	return c.viewColl(m, name, false, []viewArg{{b: &send, counts: sendCounts}, {b: &recv, out: recvOut, counts: recvCounts}},
		func(m call) (*Request, error) { return run(m, send, recv) })
}

func (c *Comm) allgathervViews(m call, send, recv Buffer, counts, displs []int) (*Request, error) {
	return c.pairViews(m, "allgatherv", send, recv, true, nil, []*[]int{&counts, &displs},
		func(m call, s, r Buffer) (*Request, error) { return c.iallgatherv(m, s, r, counts, displs) })
}

func (c *Comm) gathervViews(m call, send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	return c.pairViews(m, "gatherv", send, recv, c.Rank() == root, nil, []*[]int{&counts, &displs},
		func(m call, s, r Buffer) (*Request, error) { return c.igatherv(m, s, r, counts, displs, root) })
}

func (c *Comm) scattervViews(m call, send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	return c.pairViews(m, "scatterv", send, recv, true, []*[]int{&counts, &displs}, nil,
		func(m call, s, r Buffer) (*Request, error) { return c.iscatterv(m, s, counts, displs, r, root) })
}

func (c *Comm) alltoallvViews(m call, send Buffer, sc, sd []int, recv Buffer, rc, rd []int) (*Request, error) {
	return c.pairViews(m, "alltoallv", send, recv, true, []*[]int{&sc, &sd}, []*[]int{&rc, &rd},
		func(m call, s, r Buffer) (*Request, error) { return c.ialltoallv(m, s, sc, sd, r, rc, rd) })
}

func (c *Comm) reduceScatterViews(m call, send, recv Buffer, counts []int, op Op) (*Request, error) {
	return c.reduceViews(m, "reduce_scatter", send, recv, true, &counts,
		func(m call, s, r Buffer) (*Request, error) { return c.ireduceScatter(m, s, r, counts, op) })
}

func (c *Comm) reduceOpViews(m call, name string, send, recv Buffer, recvOut bool, op Op,
	start func(c *Comm, m call, send, recv Buffer, op Op) (*Request, error)) (*Request, error) {
	return c.reduceViews(m, name, send, recv, recvOut, nil,
		func(m call, s, r Buffer) (*Request, error) { return start(c, m, s, r, op) })
}

func (c *Comm) reduceRootViews(m call, send, recv Buffer, op Op, root int) (*Request, error) {
	return c.reduceViews(m, "reduce", send, recv, c.Rank() == root, nil,
		func(m call, s, r Buffer) (*Request, error) { return c.ireduce(m, s, r, op, root) })
}

func (c *Comm) pairRootViews(m call, name string, send, recv Buffer, recvOut bool,
	start func(m call, send, recv Buffer) (*Request, error)) (*Request, error) {
	return c.pairViews(m, name, send, recv, recvOut, nil, nil, start)
}
