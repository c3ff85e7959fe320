package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// Op is a reduction operation: one of the predefined ones or a
// user-defined Go function (NewOp). The zero Op is none: a reduction given
// it fails with ErrOp.
type Op struct{ in core.Op }

// The predefined operations (MPI's, plus Avg as NCCL has it).
var (
	Sum  = Op{core.Sum}
	Prod = Op{core.Prod}
	Min  = Op{core.Min}
	Max  = Op{core.Max}
	Land = Op{core.Land}
	Lor  = Op{core.Lor}
	Lxor = Op{core.Lxor}
	Band = Op{core.Band}
	Bor  = Op{core.Bor}
	Bxor = Op{core.Bxor}
	Avg  = Op{core.Avg}
)

// NewOp makes a user-defined operation for elements of type T: f must set
// inout[i] = in[i] ∘ inout[i], where in holds the contribution of lower
// ranks. Non-commutative operations are applied in rank order. Using the
// op with buffers of another element type is an ErrOp.
func NewOp[T Elem](f func(in, inout []T), commutative bool) Op {
	return Op{core.NewOp[T](f, commutative)}
}

// InPlace, passed as the send buffer (or the root's receive buffer of
// Scatter/Scatterv), selects MPI's in-place variant (MPI_IN_PLACE).
var InPlace Buffer = inPlace{}

// inPlace is InPlace's type: core's in-place marker behind mpi's Buffer.
type inPlace struct{}

func (inPlace) Len() int        { return 0 }
func (inPlace) Type() Type      { return Type{} }
func (inPlace) cb() core.Buffer { return core.InPlace }

// Barrier blocks until every rank of c has called it.
func (c *Comm) Barrier() error {
	return c.fail(coreComm(c).Barrier())
}

// Ibarrier starts a barrier.
func (c *Comm) Ibarrier() (*Request, error) {
	r0, r1 := coreComm(c).Ibarrier()
	return faceRequest(r0), c.fail(r1)
}

// Bcast sends root's buf to every rank's buf.
func (c *Comm) Bcast(buf Buffer, root int) error {
	return c.fail(coreComm(c).Bcast(cb(buf), root))
}

// Ibcast starts a Bcast.
func (c *Comm) Ibcast(buf Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).Ibcast(cb(buf), root)
	return faceRequest(r0), c.fail(r1)
}

// Reduce combines every rank's send with op into root's recv (recv may be
// nil on other ranks). Pass InPlace as send at the root to use recv as its
// contribution.
func (c *Comm) Reduce(send, recv Buffer, op Op, root int) error {
	return c.fail(coreComm(c).Reduce(cb(send), cb(recv), op.in, root))
}

// Ireduce starts a Reduce.
func (c *Comm) Ireduce(send, recv Buffer, op Op, root int) (*Request, error) {
	r0, r1 := coreComm(c).Ireduce(cb(send), cb(recv), op.in, root)
	return faceRequest(r0), c.fail(r1)
}

// Allreduce combines every rank's send with op into every rank's recv.
func (c *Comm) Allreduce(send, recv Buffer, op Op) error {
	return c.fail(coreComm(c).Allreduce(cb(send), cb(recv), op.in))
}

// Iallreduce starts an Allreduce.
func (c *Comm) Iallreduce(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).Iallreduce(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// Scan computes on rank r the reduction over ranks 0..r.
func (c *Comm) Scan(send, recv Buffer, op Op) error {
	return c.fail(coreComm(c).Scan(cb(send), cb(recv), op.in))
}

// Iscan starts a Scan.
func (c *Comm) Iscan(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).Iscan(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// Exscan computes on rank r the reduction over ranks 0..r-1 (rank 0's recv
// is left unchanged).
func (c *Comm) Exscan(send, recv Buffer, op Op) error {
	return c.fail(coreComm(c).Exscan(cb(send), cb(recv), op.in))
}

// Iexscan starts an Exscan.
func (c *Comm) Iexscan(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).Iexscan(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ReduceScatterBlock reduces send (Size()×recv.Len() elements) with op and
// leaves block r of the result in rank r's recv.
func (c *Comm) ReduceScatterBlock(send, recv Buffer, op Op) error {
	return c.fail(coreComm(c).ReduceScatterBlock(cb(send), cb(recv), op.in))
}

// IreduceScatterBlock starts a ReduceScatterBlock.
func (c *Comm) IreduceScatterBlock(send, recv Buffer, op Op) (*Request, error) {
	r0, r1 := coreComm(c).IreduceScatterBlock(cb(send), cb(recv), op.in)
	return faceRequest(r0), c.fail(r1)
}

// ReduceScatter reduces send (sum(counts) elements) with op and leaves
// counts[r] elements of the result in rank r's recv.
func (c *Comm) ReduceScatter(send, recv Buffer, counts []int, op Op) error {
	return c.fail(coreComm(c).ReduceScatter(cb(send), cb(recv), counts, op.in))
}

// IreduceScatter starts a ReduceScatter.
func (c *Comm) IreduceScatter(send, recv Buffer, counts []int, op Op) (*Request, error) {
	r0, r1 := coreComm(c).IreduceScatter(cb(send), cb(recv), counts, op.in)
	return faceRequest(r0), c.fail(r1)
}

// Allgather gathers every rank's send into every rank's recv, in rank
// order.
func (c *Comm) Allgather(send, recv Buffer) error {
	return c.fail(coreComm(c).Allgather(cb(send), cb(recv)))
}

// Iallgather starts an Allgather.
func (c *Comm) Iallgather(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).Iallgather(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// Allgatherv gathers counts[r] elements from each rank r into recv at
// displs[r].
func (c *Comm) Allgatherv(send, recv Buffer, counts, displs []int) error {
	return c.fail(coreComm(c).Allgatherv(cb(send), cb(recv), counts, displs))
}

// Iallgatherv starts an Allgatherv.
func (c *Comm) Iallgatherv(send, recv Buffer, counts, displs []int) (*Request, error) {
	r0, r1 := coreComm(c).Iallgatherv(cb(send), cb(recv), counts, displs)
	return faceRequest(r0), c.fail(r1)
}

// Gather collects every rank's send into root's recv, in rank order.
func (c *Comm) Gather(send, recv Buffer, root int) error {
	return c.fail(coreComm(c).Gather(cb(send), cb(recv), root))
}

// Igather starts a Gather.
func (c *Comm) Igather(send, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).Igather(cb(send), cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// Gatherv collects counts[r] elements from rank r into root's recv at
// displs[r].
func (c *Comm) Gatherv(send, recv Buffer, counts, displs []int, root int) error {
	return c.fail(coreComm(c).Gatherv(cb(send), cb(recv), counts, displs, root))
}

// Igatherv starts a Gatherv.
func (c *Comm) Igatherv(send, recv Buffer, counts, displs []int, root int) (*Request, error) {
	r0, r1 := coreComm(c).Igatherv(cb(send), cb(recv), counts, displs, root)
	return faceRequest(r0), c.fail(r1)
}

// Scatter sends block r of root's send to rank r's recv. Pass InPlace as
// the root's recv to keep its own block in place.
func (c *Comm) Scatter(send, recv Buffer, root int) error {
	return c.fail(coreComm(c).Scatter(cb(send), cb(recv), root))
}

// Iscatter starts a Scatter.
func (c *Comm) Iscatter(send, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).Iscatter(cb(send), cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// Scatterv sends counts[r] elements at displs[r] of root's send to rank r.
func (c *Comm) Scatterv(send Buffer, counts, displs []int, recv Buffer, root int) error {
	return c.fail(coreComm(c).Scatterv(cb(send), counts, displs, cb(recv), root))
}

// Iscatterv starts a Scatterv.
func (c *Comm) Iscatterv(send Buffer, counts, displs []int, recv Buffer, root int) (*Request, error) {
	r0, r1 := coreComm(c).Iscatterv(cb(send), counts, displs, cb(recv), root)
	return faceRequest(r0), c.fail(r1)
}

// Alltoall sends block d of send to rank d, which receives it as block r
// of its recv.
func (c *Comm) Alltoall(send, recv Buffer) error {
	return c.fail(coreComm(c).Alltoall(cb(send), cb(recv)))
}

// Ialltoall starts an Alltoall.
func (c *Comm) Ialltoall(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).Ialltoall(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// Alltoallv is Alltoall with per-rank counts and displacements.
func (c *Comm) Alltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) error {
	return c.fail(coreComm(c).Alltoallv(cb(send), sendCounts, sendDispls, cb(recv), recvCounts, recvDispls))
}

// Ialltoallv starts an Alltoallv.
func (c *Comm) Ialltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	r0, r1 := coreComm(c).Ialltoallv(cb(send), sendCounts, sendDispls, cb(recv), recvCounts, recvDispls)
	return faceRequest(r0), c.fail(r1)
}
