package mpi

// CommCreate makes the communicator of group's members, in group's order
// (MPI_Comm_create). It is collective over all of c; every process passes
// a group of members of c, and processes that pass different groups pass
// disjoint ones (each then gets its own group's communicator); processes
// outside their group get nil.
func (c *Comm) CommCreate(group *Group) (*Comm, error) {
	r0, r1 := coreComm(c).CommCreate(coreGroup(group))
	return faceComm(r0), c.fail(r1)
}

// MaxGroupTag is the largest tag CommCreateGroup takes.
const MaxGroupTag = 1<<22 - 2

// CommCreateGroup makes the communicator of group's members, in group's
// order (MPI_Comm_create_group). Unlike CommCreate it is collective only
// over the members, which all pass the same group and tag; concurrent
// creations over overlapping groups must differ in tag. The tag, in
// [0, MaxGroupTag], shares nothing with c's point-to-point tags.
func (c *Comm) CommCreateGroup(group *Group, tag int) (*Comm, error) {
	r0, r1 := coreComm(c).CommCreateGroup(coreGroup(group), tag)
	return faceComm(r0), c.fail(r1)
}

// Idup starts a Dup (MPI_Comm_idup): it returns the new communicator at
// once, usable when the request completes. It is ordered with c's other
// collectives as a collective call, and its agreement runs apart from
// them, so that they may be started meanwhile.
func (c *Comm) Idup() (*Comm, *Request, error) {
	r0, r1, r2 := coreComm(c).Idup()
	return faceComm(r0), faceRequest(r1), c.fail(r2)
}
