package mpi

import (
	"unsafe"

	"github.com/gompix/gompix/mpi/internal/core"
)

// Root is MPI_ROOT: the root of an intercommunicator's Bcast passes it as
// root; the other processes of its group pass ProcNull.
const Root = -3

// Intercomm is an intercommunicator: two disjoint groups, local and
// remote, whose point-to-point calls address ranks of the remote group
// and whose collectives move data from one group to the other. Its calls
// return their errors (it has no error handler of its own).
type Intercomm struct{ in core.Intercomm }

func coreInter(ic *Intercomm) *core.Intercomm { return (*core.Intercomm)(unsafe.Pointer(ic)) }
func faceInter(ic *core.Intercomm) *Intercomm { return (*Intercomm)(unsafe.Pointer(ic)) }

// IntercommCreate makes an intercommunicator from two disjoint groups
// (MPI_Intercomm_create): it is collective over c, the local group, and
// over the remote group's communicator, whose call names this one's
// leader. The leaders, localLeader in c and remoteLeader in peer (which
// holds both leaders; only the local leader's peer and remoteLeader are
// read), exchange the groups through peer with tag.
func (c *Comm) IntercommCreate(localLeader int, peer *Comm, remoteLeader, tag int) (*Intercomm, error) {
	r0, r1 := coreComm(c).IntercommCreate(localLeader, coreComm(peer), remoteLeader, tag)
	return faceInter(r0), c.fail(r1)
}

// Rank is the calling process's rank in the local group.
func (ic *Intercomm) Rank() int { return coreInter(ic).Rank() }

// Size is the size of the local group.
func (ic *Intercomm) Size() int { return coreInter(ic).Size() }

// RemoteSize is the size of the remote group.
func (ic *Intercomm) RemoteSize() int { return coreInter(ic).RemoteSize() }

// Group returns the local group.
func (ic *Intercomm) Group() *Group { return faceGroup(coreInter(ic).Group()) }

// RemoteGroup returns the remote group.
func (ic *Intercomm) RemoteGroup() *Group { return faceGroup(coreInter(ic).RemoteGroup()) }

// Send sends buf to rank dest of the remote group.
func (ic *Intercomm) Send(buf Buffer, dest, tag int) error {
	return face(coreInter(ic).Send(cb(buf), dest, tag))
}

// Recv receives from rank src of the remote group (or AnySource);
// Status.Source is a remote rank.
func (ic *Intercomm) Recv(buf Buffer, src, tag int) (Status, error) {
	r0, r1 := coreInter(ic).Recv(cb(buf), src, tag)
	return Status(r0), face(r1)
}

// Isend starts a send to rank dest of the remote group.
func (ic *Intercomm) Isend(buf Buffer, dest, tag int) (*Request, error) {
	r0, r1 := coreInter(ic).Isend(cb(buf), dest, tag)
	return faceRequest(r0), face(r1)
}

// Irecv starts a receive from rank src of the remote group.
func (ic *Intercomm) Irecv(buf Buffer, src, tag int) (*Request, error) {
	r0, r1 := coreInter(ic).Irecv(cb(buf), src, tag)
	return faceRequest(r0), face(r1)
}

// Sendrecv sends sendbuf to remote rank dest and receives into recvbuf
// from remote rank src, both at once.
func (ic *Intercomm) Sendrecv(sendbuf Buffer, dest, sendtag int, recvbuf Buffer, src, recvtag int) (Status, error) {
	r0, r1 := coreInter(ic).Sendrecv(cb(sendbuf), dest, sendtag, cb(recvbuf), src, recvtag)
	return Status(r0), face(r1)
}

// Probe blocks until a message from remote rank src (or AnySource) with
// tag can be received and describes it.
func (ic *Intercomm) Probe(src, tag int) (Status, error) {
	r0, r1 := coreInter(ic).Probe(src, tag)
	return Status(r0), face(r1)
}

// Free frees the intercommunicator; collective over both groups.
func (ic *Intercomm) Free() error { return face(coreInter(ic).Free()) }

// Merge makes the intracommunicator of both groups
// (MPI_Intercomm_merge): the group whose processes pass high false comes
// first; when both pass the same, the group with the lowest world rank
// does. Collective over both groups.
func (ic *Intercomm) Merge(high bool) (*Comm, error) {
	r0, r1 := coreInter(ic).Merge(high)
	return faceComm(r0), face(r1)
}

// Barrier returns once every process of both groups has called it.
func (ic *Intercomm) Barrier() error { return face(coreInter(ic).Barrier()) }

// Bcast sends buf from the root to every process of the other group
// (MPI's intercommunicator broadcast): the root passes Root, the rest of
// its group ProcNull, and the other group the root's rank in the root's
// group.
func (ic *Intercomm) Bcast(buf Buffer, root int) error {
	return face(coreInter(ic).Bcast(cb(buf), root))
}

// Allreduce gives every process of each group the reduction by op of the
// send buffers of the other group.
func (ic *Intercomm) Allreduce(send, recv Buffer, op Op) error {
	return face(coreInter(ic).Allreduce(cb(send), cb(recv), op.in))
}

// Allgather gives every process the send buffers of the other group's
// processes, in rank order, in recv (RemoteSize blocks of send's length).
func (ic *Intercomm) Allgather(send, recv Buffer) error {
	return face(coreInter(ic).Allgather(cb(send), cb(recv)))
}
