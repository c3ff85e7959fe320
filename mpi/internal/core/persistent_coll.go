package core

import (
	"errors"
	"slices"

	"github.com/gompix/gompix/coll"
)

// MPI-4's persistent collectives: each XxxInit checks and converts its
// buffers as Ixxx does, then the communicator's coll.State chooses the
// algorithm, builds the schedule, takes the collective's tag and pins the
// buffers once (coll.Persistent); Start runs the schedule again. Init is a
// collective call (every rank makes it, in the same order as the others),
// and so is each Start. Init itself does not wait for the other ranks.

// collInit is a persistent collective.
type collInit struct {
	c    *Comm
	name string
	p    *coll.Persistent
}

// initColl sets up the collective f starts as a persistent request.
func (c *Comm) initColl(name string, ord int, f func(s *coll.State, cc coll.Call) (coll.Request, error)) (*Request, error) {
	c.collMu.Lock()
	st := c.engine()
	err := c.useSpace(st, ord, false)
	var p *coll.Persistent
	if err == nil {
		p, err = st.Init(coll.Call{Device: ord >= 0}, func(cc coll.Call) (coll.Request, error) { return f(st, cc) })
	}
	c.collMu.Unlock()
	if err != nil {
		return nil, wrapColl(name+" init", err)
	}
	return newPersistent(c.life, 0, &collInit{c: c, name: name, p: p}), nil
}

func (ci *collInit) start(r *Request) error {
	c := ci.c
	if err := c.checkColl(ci.name); err != nil {
		return err
	}
	c.collMu.Lock()
	cr, err := ci.p.Start()
	c.collMu.Unlock()
	if err != nil {
		if errors.Is(err, coll.ErrActive) {
			return &Error{Op: "start", Class: ErrRequest, Err: err}
		}
		return wrapColl(ci.name, err)
	}
	c.pending.started()
	r.done, r.p2p, r.sched = false, false, errWrapper{cr, ci.name, c}
	return nil
}

func (ci *collInit) release() { ci.p.Free() }

// CollAlgorithm is the name of the algorithm a persistent collective's
// Init chose ("" for other requests).
func (r *Request) CollAlgorithm() string {
	if r == nil || r.pers == nil {
		return ""
	}
	if ci, ok := r.pers.op.(*collInit); ok {
		return ci.p.Algorithm()
	}
	return ""
}

var initCall = call{persist: true}

// BarrierInit makes a persistent Barrier (MPI_Barrier_init).
func (c *Comm) BarrierInit() (*Request, error) { return c.ibarrier(initCall) }

// BcastInit makes a persistent Bcast (MPI_Bcast_init).
func (c *Comm) BcastInit(buf Buffer, root int) (*Request, error) {
	return c.ibcast(initCall, buf, root)
}

// ReduceInit makes a persistent Reduce (MPI_Reduce_init).
func (c *Comm) ReduceInit(send, recv Buffer, op Op, root int) (*Request, error) {
	return c.ireduce(initCall, send, recv, op, root)
}

// AllreduceInit makes a persistent Allreduce (MPI_Allreduce_init).
func (c *Comm) AllreduceInit(send, recv Buffer, op Op) (*Request, error) {
	return c.iallreduce(initCall, send, recv, op)
}

// ScanInit makes a persistent Scan (MPI_Scan_init).
func (c *Comm) ScanInit(send, recv Buffer, op Op) (*Request, error) {
	return c.iscan(initCall, send, recv, op)
}

// ExscanInit makes a persistent Exscan (MPI_Exscan_init).
func (c *Comm) ExscanInit(send, recv Buffer, op Op) (*Request, error) {
	return c.iexscan(initCall, send, recv, op)
}

// ReduceScatterBlockInit makes a persistent ReduceScatterBlock
// (MPI_Reduce_scatter_block_init).
func (c *Comm) ReduceScatterBlockInit(send, recv Buffer, op Op) (*Request, error) {
	return c.ireduceScatterBlock(initCall, send, recv, op)
}

// ReduceScatterInit makes a persistent ReduceScatter
// (MPI_Reduce_scatter_init).
func (c *Comm) ReduceScatterInit(send, recv Buffer, counts []int, op Op) (*Request, error) {
	return c.ireduceScatter(initCall, send, recv, slices.Clone(counts), op)
}

// AllgatherInit makes a persistent Allgather (MPI_Allgather_init).
func (c *Comm) AllgatherInit(send, recv Buffer) (*Request, error) {
	return c.iallgather(initCall, send, recv)
}

// AllgathervInit makes a persistent Allgatherv (MPI_Allgatherv_init).
func (c *Comm) AllgathervInit(send, recv Buffer, counts, displs []int) (*Request, error) {
	return c.iallgatherv(initCall, send, recv, slices.Clone(counts), slices.Clone(displs))
}

// GatherInit makes a persistent Gather (MPI_Gather_init).
func (c *Comm) GatherInit(send, recv Buffer, root int) (*Request, error) {
	return c.igather(initCall, send, recv, root)
}

// GathervInit makes a persistent Gatherv (MPI_Gatherv_init).
func (c *Comm) GathervInit(send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	return c.igatherv(initCall, send, recv, slices.Clone(counts), slices.Clone(displs), root)
}

// ScatterInit makes a persistent Scatter (MPI_Scatter_init).
func (c *Comm) ScatterInit(send, recv Buffer, root int) (*Request, error) {
	return c.iscatter(initCall, send, recv, root)
}

// ScattervInit makes a persistent Scatterv (MPI_Scatterv_init).
func (c *Comm) ScattervInit(send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	return c.iscatterv(initCall, send, slices.Clone(counts), slices.Clone(displs), recv, root)
}

// AlltoallInit makes a persistent Alltoall (MPI_Alltoall_init).
func (c *Comm) AlltoallInit(send, recv Buffer) (*Request, error) {
	return c.ialltoall(initCall, send, recv)
}

// AlltoallvInit makes a persistent Alltoallv (MPI_Alltoallv_init).
func (c *Comm) AlltoallvInit(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	return c.ialltoallv(initCall, send, slices.Clone(sendCounts), slices.Clone(sendDispls), recv,
		slices.Clone(recvCounts), slices.Clone(recvDispls))
}
