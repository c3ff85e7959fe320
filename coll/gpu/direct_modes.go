package gpu

import (
	"fmt"

	"github.com/gompix/gompix/coll"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/kernels"
)

// How the engine's stream runs each mode of a call (direct.go describes the
// modes and their protocol): flag barriers between the ranks, copies and
// reductions of the peers' slots or buffers, the fused launches.

// barrier makes the stream tell every peer it reached phase (after all its
// earlier work), then wait until every peer has told it the same.
func (d *Direct) barrier(phase int, s uint32) error {
	for i := range d.p {
		if i == d.rank {
			continue
		}
		if err := d.flags.Write(d.cur, d.peers[i]+cudadrv.DevicePtr(flagOff(phase, d.rank)), s); err != nil {
			return err
		}
	}
	for i := range d.p {
		if i == d.rank {
			continue
		}
		if err := d.flags.Wait(d.cur, d.region+cudadrv.DevicePtr(flagOff(phase, i)), s); err != nil {
			return err
		}
	}
	return nil
}

// copyAsync enqueues a device copy (either side may be a peer's mapped
// memory: the copy engine reads or writes over the link).
func (d *Direct) copyAsync(dst, src cudadrv.DevicePtr, n int) error {
	if n == 0 || dst == src {
		return nil
	}
	return d.dev.MemcpyDtoDAsync(dst, src, n, d.cur)
}

// reduce enqueues out = op(in...) for the call's op and type over n
// elements.
func (d *Direct) reduce(c *coll.DirectCall, out cudadrv.DevicePtr, in []cudadrv.DevicePtr, n int) error {
	return d.mod.LaunchReduce(d.cur, c.Op, c.Type, out, in, n, c.Contributors)
}

// enqueueStaged runs a call whose exposed data fits a slot.
func (d *Direct) enqueueStaged(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	send, recv := Addr(c.Send), Addr(c.Recv)
	src := send
	if c.Send == nil {
		src = recv
	}
	mySlot := d.slotAddr(r, s)
	slots := make([]cudadrv.DevicePtr, p)
	for i := range p {
		slots[i] = d.slotAddr(i, s)
	}
	var err error
	switch c.Kind {
	case coll.Allreduce, coll.Reduce:
		if err = d.copyAsync(mySlot, src, n); err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil && (c.Kind == coll.Allreduce || r == c.Root) {
			err = d.reduce(c, recv, slots, c.Count)
		}
	case coll.Bcast:
		if r == c.Root {
			err = d.copyAsync(mySlot, recv, n)
		}
		if err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil && r != c.Root {
			err = d.copyAsync(recv, slots[c.Root], n)
		}
	case coll.Allgather:
		if c.Send == nil {
			src = recv + cudadrv.DevicePtr(r*n)
		}
		if err = d.copyAsync(mySlot, src, n); err == nil {
			err = d.barrier(flagArrive, s)
		}
		for i := 0; i < p && err == nil; i++ {
			from := slots[i]
			if i == r {
				from = src
			}
			err = d.copyAsync(recv+cudadrv.DevicePtr(i*n), from, n)
		}
	case coll.Alltoall:
		if err = d.copyAsync(mySlot, src, n*p); err == nil {
			err = d.barrier(flagArrive, s)
		}
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(recv+cudadrv.DevicePtr(i*n), slots[i]+cudadrv.DevicePtr(r*n), n)
		}
	case coll.ReduceScatterBlock:
		if err = d.copyAsync(mySlot, src, n*p); err == nil {
			err = d.barrier(flagArrive, s)
		}
		if err == nil {
			in := make([]cudadrv.DevicePtr, p)
			for i := range p {
				in[i] = slots[i] + cudadrv.DevicePtr(r*n)
			}
			err = d.reduce(c, recv, in, c.Count)
		}
	default:
		err = fmt.Errorf("coll/gpu: %v is not a direct collective", c.Kind)
	}
	return err
}

// fusable reports whether c runs as one fused kernel: a small collective.
func (d *Direct) fusable(c *coll.DirectCall) bool {
	switch c.Kind {
	case coll.Allreduce, coll.Reduce, coll.ReduceScatterBlock, coll.Allgather, coll.Bcast, coll.Alltoall:
		return d.exposed(c) <= d.fused
	}
	return false
}

// enqueueFusedGather launches the gather kernel of a small allgather, bcast
// or alltoall: the staged mode's copy and barrier, then copies of the
// slots' blocks into the output, in one block of one launch.
func (d *Direct) enqueueFusedGather(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	n := c.Count * c.Type.Size()
	recv := Addr(c.Recv)
	src := Addr(c.Send)
	a := kernels.DirectArgs{Slot: uintptr(d.slotAddr(r, s)), Seq: s, Reduce: 1, Done: uintptr(d.doneDev)}
	a.R.Out, a.R.N = uintptr(recv), uint64(n)
	for i := range p {
		if i != r {
			a.PeerFlag[i] = uintptr(d.peers[i]) + uintptr(flagOff(flagArrive, r))
			a.MyFlag[i] = uintptr(d.region) + uintptr(flagOff(flagArrive, i))
		}
	}
	switch c.Kind {
	case coll.Allgather:
		if c.Send == nil {
			src = recv + cudadrv.DevicePtr(r*n)
		}
		a.Src, a.NCopy, a.R.K = uintptr(src), uint64(n), uint32(p)
		for i := range p {
			a.R.In[i] = uintptr(d.slotAddr(i, s))
		}
	case coll.Bcast:
		a.R.K = 1
		if r == c.Root {
			a.Src, a.NCopy, a.Reduce = uintptr(recv), uint64(n), 0
		} else {
			a.R.In[0] = uintptr(d.slotAddr(c.Root, s))
		}
	case coll.Alltoall:
		if c.Send == nil {
			src = recv
		}
		a.Src, a.NCopy, a.R.K = uintptr(src), uint64(n*p), uint32(p)
		for i := range p {
			a.R.In[i] = uintptr(d.slotAddr(i, s)) + uintptr(r*n)
		}
	}
	return d.mod.launchGather(d.cur, &a)
}

// enqueueFused launches the fused kernel of a small reduction: the staged
// mode's copy, barrier and reduction in one block of one launch.
func (d *Direct) enqueueFused(q *directReq) error {
	switch q.c.Kind {
	case coll.Allgather, coll.Bcast, coll.Alltoall:
		return d.enqueueFusedGather(q)
	}
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	src := Addr(c.Send)
	if c.Send == nil {
		src = Addr(c.Recv)
	}
	a := kernels.DirectArgs{Src: uintptr(src), Slot: uintptr(d.slotAddr(r, s)), NCopy: uint64(d.exposed(c)), Seq: s, Reduce: 1,
		Done: uintptr(d.doneDev)}
	var in []uintptr
	off := 0
	if c.Kind == coll.ReduceScatterBlock {
		off = r * n
	}
	for i := range p {
		in = append(in, uintptr(d.slotAddr(i, s))+uintptr(off))
		if i != r {
			a.PeerFlag[i] = uintptr(d.peers[i]) + uintptr(flagOff(flagArrive, r))
			a.MyFlag[i] = uintptr(d.region) + uintptr(flagOff(flagArrive, i))
		}
	}
	if c.Kind == coll.Reduce && r != c.Root {
		a.Reduce = 0
	}
	ra, err := kernels.NewReduceArgs(c.Op, uintptr(Addr(c.Recv)), in, uint64(c.Count), c.Contributors)
	if err != nil {
		return err
	}
	a.R = ra
	// One block per fusedBlockBytes of the larger of what it copies and
	// what it reduces, up to maxFusedBlocks; several blocks meet on the
	// arrival counters.
	grid := uint32(1)
	if work := max(int(a.NCopy), c.Count*esz*p); work > fusedBlockBytes {
		grid = uint32(min((work+fusedBlockBytes-1)/fusedBlockBytes, maxFusedBlocks))
		d.fusedBlocks += grid
		a.Counter, a.Target = uintptr(d.region)+counterOff, d.fusedBlocks
	}
	return d.mod.launchDirect(d.cur, c.Op, c.Type, &a, grid)
}

// Multi-block fused launches: bytes of work per block, the most blocks (few
// enough to be resident at once, as each waits for the peers), and the
// arrival counters' place in the flag area.
const (
	fusedBlockBytes = 16 << 10
	maxFusedBlocks  = 16
	counterOff      = flagsBytes - 16
)

// chunk is rank i's share [off, off+n) of count elements, cut on 16-byte
// boundaries so that the kernels' vector loads stay aligned.
func chunk(count, esz, p, i int) (off, n int) {
	per := 16 / esz
	if per < 1 {
		per = 1
	}
	units := (count + per - 1) / per
	lo, hi := units*i/p*per, units*(i+1)/p*per
	lo, hi = min(lo, count), min(hi, count)
	return lo, hi - lo
}

// enqueueMapped runs a call on the user's buffers, mapped through the
// handles q's exchange delivered.
func (d *Direct) enqueueMapped(q *directReq) error {
	c, s, r, p := &q.c, q.seq, d.rank, d.p
	esz := c.Type.Size()
	n := c.Count * esz
	ins, outs := q.peerSend, q.peerRecv // every rank's buffers as mapped here
	var err error
	switch c.Kind {
	case coll.Allreduce:
		off, cnt := chunk(c.Count, esz, p, r)
		at := cudadrv.DevicePtr(off * esz)
		in := make([]cudadrv.DevicePtr, p)
		for i := range p {
			in[i] = ins[i] + at
		}
		if d.push {
			// Chunk r of every input, reduced once, stored into chunk r of
			// every output: in place too, each element is read before the
			// one thread that owns it writes it, and no other rank touches
			// chunk r.
			a := kernels.DirectArgs{Reduce: 1}
			raw := make([]uintptr, p)
			for i := range p {
				raw[i] = uintptr(in[i])
				if i != r {
					a.Outs[i] = uintptr(outs[i] + at)
				}
			}
			if a.R, err = kernels.NewReduceArgs(c.Op, uintptr(outs[r]+at), raw, uint64(cnt), c.Contributors); err == nil && cnt > 0 {
				err = d.mod.launchDirect(d.cur, c.Op, c.Type, &a, 0)
			}
			break
		}
		if err = d.reduce(c, outs[r]+at, in, cnt); err == nil {
			err = d.barrier(flagMid, s)
		}
		for i := 0; i < p && err == nil; i++ {
			if i == r {
				continue
			}
			o, k := chunk(c.Count, esz, p, i)
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(o*esz), outs[i]+cudadrv.DevicePtr(o*esz), k*esz)
		}
	case coll.Reduce:
		if r == c.Root {
			err = d.reduce(c, outs[r], ins, c.Count)
		}
	case coll.Bcast:
		if r != c.Root {
			err = d.copyAsync(outs[r], outs[c.Root], n)
		}
	case coll.Allgather:
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(i*n), ins[i], n)
		}
	case coll.Alltoall:
		for i := 0; i < p && err == nil; i++ {
			err = d.copyAsync(outs[r]+cudadrv.DevicePtr(i*n), ins[i]+cudadrv.DevicePtr(r*n), n)
		}
	case coll.ReduceScatterBlock:
		in := make([]cudadrv.DevicePtr, p)
		for i := range p {
			in[i] = ins[i] + cudadrv.DevicePtr(r*n)
		}
		err = d.reduce(c, outs[r], in, c.Count)
	default:
		err = fmt.Errorf("coll/gpu: %v is not a direct collective", c.Kind)
	}
	if err == nil {
		err = d.barrier(flagFin, s)
	}
	return err
}
