package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Persistent point-to-point and collective requests (MPI_Send_init and the
// rest): the Init call checks the arguments, pins the buffers and prepares
// the operation once; each Start begins one round of it in the same
// Request, which Wait and Test complete and leave inactive, ready for the
// next Start. Free releases it.

// Start begins a round of a persistent request (MPI_Start). Starting a
// request that is active (started and not yet completed by Wait or Test),
// freed, or not persistent is an ErrRequest.
func (r *Request) Start() error { return face(coreRequest(r).Start()) }

// Startall starts every request (MPI_Startall), in order; it stops at the
// first that fails and returns its error.
func Startall(rs ...*Request) error { return face(core.Startall(reqs(rs)...)) }

// Persistent reports whether r was made by one of the Init calls.
func (r *Request) Persistent() bool { return coreRequest(r).Persistent() }

// CollAlgorithm is the name of the algorithm a persistent collective's
// Init chose ("" for other requests).
func (r *Request) CollAlgorithm() string { return coreRequest(r).CollAlgorithm() }

// SendInit makes a persistent standard-mode send of buf to dest with tag
// (MPI_Send_init): Start sends it, each time with buf's contents then.
func (c *Comm) SendInit(buf Buffer, dest, tag int) (*Request, error) {
	r0, r1 := coreComm(c).SendInit(cb(buf), dest, tag)
	return faceRequest(r0), c.fail(r1)
}

// SsendInit makes a persistent synchronous-mode send (MPI_Ssend_init).
func (c *Comm) SsendInit(buf Buffer, dest, tag int) (*Request, error) {
	r0, r1 := coreComm(c).SsendInit(cb(buf), dest, tag)
	return faceRequest(r0), c.fail(r1)
}

// RecvInit makes a persistent receive into buf from src (or AnySource)
// with tag (or AnyTag) (MPI_Recv_init).
func (c *Comm) RecvInit(buf Buffer, src, tag int) (*Request, error) {
	r0, r1 := coreComm(c).RecvInit(cb(buf), src, tag)
	return faceRequest(r0), c.fail(r1)
}

// The persistent collectives (MPI-4): each XxxInit is a collective call
// that checks its arguments as Ixxx does, chooses the algorithm, builds
// its schedule and pins its buffers once, without waiting for the other
// ranks; every Start (also collective, in the same order on every rank)
// runs the schedule on the buffers' contents then.

// BarrierInit makes a persistent Barrier (MPI_Barrier_init).
func (c *Comm) BarrierInit() (*Request, error) {
	r0, r1 := coreComm(c).BarrierInit()
	return faceRequest(r0), c.fail(r1)
}

// BcastInit makes a persistent Bcast (MPI_Bcast_init).
func (c *Comm) BcastInit(buf Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).BcastInit(cb(buf), root)
	return faceRequest(r0), c.fail(r1)
}

// ReduceInit makes a persistent Reduce (MPI_Reduce_init).
func (c *Comm) ReduceInit(send, recv Buffer, op Op, root int) (*Request, error) {
	r0, r1 := coreComm(c).ReduceInit(cb(send), cb(recv), op.in, root)
	return faceRequest(r0), c.fail(r1)
}

// AllreduceInit makes a persistent Allreduce (MPI_Allreduce_init).
func (c *Comm) AllreduceInit(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).AllreduceInit(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ScanInit makes a persistent Scan (MPI_Scan_init).
func (c *Comm) ScanInit(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).ScanInit(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ExscanInit makes a persistent Exscan (MPI_Exscan_init).
func (c *Comm) ExscanInit(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).ExscanInit(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ReduceScatterBlockInit makes a persistent ReduceScatterBlock
// (MPI_Reduce_scatter_block_init).
func (c *Comm) ReduceScatterBlockInit(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).ReduceScatterBlockInit(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ReduceScatterInit makes a persistent ReduceScatter
// (MPI_Reduce_scatter_init).
func (c *Comm) ReduceScatterInit(send, recv Buffer, counts []int, op Op) (*Request, error) {
	r0, r1 := coreComm(c).ReduceScatterInit(cb(send), cb(recv), counts, op.in)
	return faceRequest(r0), c.fail(r1)
}

// AllgatherInit makes a persistent Allgather (MPI_Allgather_init).
func (c *Comm) AllgatherInit(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).AllgatherInit(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// AllgathervInit makes a persistent Allgatherv (MPI_Allgatherv_init).
func (c *Comm) AllgathervInit(send, recv Buffer, counts, displs []int) (*Request, error) {
	r0, r1 := coreComm(c).AllgathervInit(cb(send), cb(recv), counts, displs)
	return faceRequest(r0), c.fail(r1)
}

// GatherInit makes a persistent Gather (MPI_Gather_init).
func (c *Comm) GatherInit(send, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).GatherInit(cb(send), cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// GathervInit makes a persistent Gatherv (MPI_Gatherv_init).
func (c *Comm) GathervInit(send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	r0, r1 := coreComm(c).GathervInit(cb(send), cb(recv), counts, displs, root)
	return faceRequest(r0), c.fail(r1)
}

// ScatterInit makes a persistent Scatter (MPI_Scatter_init).
func (c *Comm) ScatterInit(send, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).ScatterInit(cb(send), cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// ScattervInit makes a persistent Scatterv (MPI_Scatterv_init).
func (c *Comm) ScattervInit(send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).ScattervInit(cb(send), counts, displs, cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// AlltoallInit makes a persistent Alltoall (MPI_Alltoall_init).
func (c *Comm) AlltoallInit(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).AlltoallInit(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// AlltoallvInit makes a persistent Alltoallv (MPI_Alltoallv_init).
func (c *Comm) AlltoallvInit(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	r0, r1 := coreComm(c).AlltoallvInit(cb(send), sendCounts, sendDispls, cb(recv), recvCounts, recvDispls)
	return faceRequest(r0), c.fail(r1)
}
