package mpi

// Partitioned communication (MPI-4): a send's buffer is cut into
// partitions, each sent as soon as it is marked ready (Pready, or from the
// GPU: PreadyFlags, PreadyOnStream); the receiver may cut the same bytes
// differently and watch its partitions arrive (Parrived). Both sides are
// persistent requests: Start, then Wait or Test, round after round.

// PsendInit makes a partitioned send of buf, in partitions equal parts,
// to dest with tag (MPI_Psend_init). Each round (Start) sends a partition
// once Pready marks it ready; Wait completes once all have been sent.
func (c *Comm) PsendInit(buf Buffer, partitions, dest, tag int) (*Request, error) {
	r0, r1 := coreComm(c).PsendInit(cb(buf), partitions, dest, tag)
	return faceRequest(r0), c.fail(r1)
}

// PrecvInit makes a partitioned receive into buf, in partitions equal
// parts, from src with tag (MPI_Precv_init); neither may be a wildcard. The
// sender may cut the same number of bytes into other partitions. Parrived
// tells which partitions have arrived in the active round.
func (c *Comm) PrecvInit(buf Buffer, partitions, src, tag int) (*Request, error) {
	r0, r1 := coreComm(c).PrecvInit(cb(buf), partitions, src, tag)
	return faceRequest(r0), c.fail(r1)
}

// Pready marks a partition of an active partitioned send ready
// (MPI_Pready): it is sent from then on, and its part of the buffer must
// not change until the round completes. Marking one twice in a round is an
// ErrRequest; an index out of range an ErrArg.
func (r *Request) Pready(partition int) error { return face(coreRequest(r).Pready(partition)) }

// PreadyRange marks partitions lo through hi (inclusive) ready
// (MPI_Pready_range).
func (r *Request) PreadyRange(lo, hi int) error { return face(coreRequest(r).PreadyRange(lo, hi)) }

// PreadyList marks the listed partitions ready (MPI_Pready_list).
func (r *Request) PreadyList(partitions ...int) error {
	return face(coreRequest(r).PreadyList(partitions...))
}

// Parrived reports whether a partition of an active partitioned receive
// has arrived (MPI_Parrived); once the round has completed, every partition
// has. An index out of range is an ErrArg, a receive never started an
// ErrRequest.
func (r *Request) Parrived(partition int) (bool, error) {
	ok, err := coreRequest(r).Parrived(partition)
	return ok, face(err)
}

// PreadyFlags makes the partitions of a partitioned send ready from the GPU
// and returns the device address of their flags: one uint32 per partition
// in mapped host memory. A kernel marks partition i ready for the n-th
// Start (n = 1, 2, …; PartitionRound) by storing n into the word at
// address+4*i after a system-wide fence (__threadfence_system) that orders
// its writes of the partition's data before it. Every wait of the process
// (the send's Test and Wait, and the waits of other calls) reads the flags
// and sends each partition marked.
func (r *Request) PreadyFlags() (uintptr, error) {
	p, err := coreRequest(r).PreadyFlags()
	return p, face(err)
}

// PartitionRound is the number of Starts of a partitioned send so far: the
// value a kernel stores into a partition's flag (PreadyFlags) to mark it
// ready in the active round.
func (r *Request) PartitionRound() (uint32, error) {
	n, err := coreRequest(r).PartitionRound()
	return n, face(err)
}

// PreadyOnStream marks a partition of the active round ready once the work
// enqueued on s so far (the kernel computing it) has completed: a flag
// write ordered on the stream. The partition goes out when the send's
// progress next sees the flag (any wait of the process).
func (r *Request) PreadyOnStream(s *Stream, partition int) error {
	return face(coreRequest(r).PreadyOnStream(coreStream(s), partition))
}
