package mpi

// Neighbourhood collectives exchange with the neighbours of a communicator's
// topology: on a Cartesian grid, for each dimension, the process below and
// then the one above (ProcNull past a non-periodic edge, whose blocks are
// neither sent nor touched); on a graph, its adjacency list; on a
// distributed graph, its sources (received from) and destinations (sent
// to). Host and device buffers both work.

// NeighborAllgather sends send to every outgoing neighbour and receives
// one block of send's length from each incoming neighbour into recv, in
// neighbour order (MPI_Neighbor_allgather).
func (c *Comm) NeighborAllgather(send, recv Buffer) error {
	return c.fail(coreComm(c).NeighborAllgather(cb(send), cb(recv)))
}

// IneighborAllgather starts a NeighborAllgather.
func (c *Comm) IneighborAllgather(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).IneighborAllgather(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// NeighborAllgatherv is NeighborAllgather with the block from incoming
// neighbour i of counts[i] elements, placed at displs[i] in recv.
func (c *Comm) NeighborAllgatherv(send, recv Buffer, counts, displs []int) error {
	return c.fail(coreComm(c).NeighborAllgatherv(cb(send), cb(recv), counts, displs))
}

// IneighborAllgatherv starts a NeighborAllgatherv.
func (c *Comm) IneighborAllgatherv(send, recv Buffer, counts, displs []int) (*Request, error) {
	r0, r1 := coreComm(c).IneighborAllgatherv(cb(send), cb(recv), counts, displs)
	return faceRequest(r0), c.fail(r1)
}

// NeighborAlltoall sends block i of send to outgoing neighbour i and
// receives block i of recv from incoming neighbour i; all blocks have one
// size (MPI_Neighbor_alltoall).
func (c *Comm) NeighborAlltoall(send, recv Buffer) error {
	return c.fail(coreComm(c).NeighborAlltoall(cb(send), cb(recv)))
}

// IneighborAlltoall starts a NeighborAlltoall.
func (c *Comm) IneighborAlltoall(send, recv Buffer) (*Request, error) {
	r0, r1 := coreComm(c).IneighborAlltoall(cb(send), cb(recv))
	return faceRequest(r0), c.fail(r1)
}

// NeighborAlltoallv is NeighborAlltoall with blocks of their own sizes and
// places: sendCounts[i] elements at sendDispls[i] go to outgoing neighbour
// i, recvCounts[i] elements from incoming neighbour i land at
// recvDispls[i].
func (c *Comm) NeighborAlltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) error {
	return c.fail(coreComm(c).NeighborAlltoallv(cb(send), sendCounts, sendDispls, cb(recv), recvCounts, recvDispls))
}

// IneighborAlltoallv starts a NeighborAlltoallv.
func (c *Comm) IneighborAlltoallv(send Buffer, sendCounts, sendDispls []int, recv Buffer, recvCounts, recvDispls []int) (*Request, error) {
	r0, r1 := coreComm(c).IneighborAlltoallv(cb(send), sendCounts, sendDispls, cb(recv), recvCounts, recvDispls)
	return faceRequest(r0), c.fail(r1)
}
