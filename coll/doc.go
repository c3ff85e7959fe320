// Package coll is gompix's collective engine: MPI's collective operations
// (barrier, bcast, reduce, allreduce, the gathers, scatters and all-to-alls,
// reduce-scatter, scan) built as schedules over a narrow point-to-point
// interface, and one executor that runs them.
//
// # Layer and imports
//
// coll sits above point-to-point and below package mpi (docs/design/architecture.md §1). It
// defines the interface it consumes (Comm, Request) and imports only
// internal/dtype, internal/config, internal/shm (the release store and the
// cross-memory reads of the shared-memory collectives) and the standard
// library; the pt2pt engine and the
// in-process transport of coll/colltest implement Comm. Device memory plugs
// in through a second Space (SetDevice, Call.Device): its Mem runs the local
// steps as device kernels and its Comm posts device-memory messages, and
// its optional Direct engine runs whole collectives on IPC-mapped peer
// memory; package coll/gpu provides both, without coll importing it.
//
// # Design
//
// Every algorithm lives in its own file (allreduce_ring.go, …) whose header
// gives its α-β cost. An algorithm does not move data itself: it appends
// steps (send, recv, reduce, copy, scale) to a schedule through a builder.
// Consecutive communication steps form a round and are posted together; the
// local steps that follow run, in order, once every communication of their
// round has completed (a copy that touches none of the round's messages may
// instead run as soon as they are posted, overlapping their transfer: an
// all-to-all's own block). The executor (a Request) advances a schedule as far
// as it can without blocking on every Test; Wait is Test in a loop. So a
// blocking collective is "start, then Wait", and blocking and nonblocking
// variants share every line of algorithm code.
//
// Steps name buffers symbolically (the caller's send buffer, receive buffer,
// or the schedule's scratch space, plus an offset and a length), and reduce,
// copy and scale steps go through the active Space's Mem; that is where
// device memory and the device reduction kernels attach. For device calls
// the byte slices are views of device memory that nothing here reads.
//
// Ranks of one node can also share memory: given a segment that every rank
// maps (SetShared; package mpi makes one per node-local communicator), a
// short blocking barrier, bcast, reduce, allreduce, allgather or alltoall
// on host buffers runs there, each rank writing its contribution into a
// slot of its own and reading its peers' in place, without messages
// (shared.go and the *_shm.go algorithms, catalog name "shm"); where the
// ranks may read each other's memory (Shared.Pids), a long bcast, reduce,
// allreduce, allgather or alltoall reads its data straight from the
// buffer of the rank that has it instead (single copy). Those are not schedules: they run inside the call, and only blocking calls use
// them (MPI never matches a blocking collective with a nonblocking one).
//
// A catalog (Catalog) lists the algorithms with their restrictions; Select
// picks one from the collective, the message size, the number of ranks and
// whether the operation commutes, by the first matching row of a table of
// measured rules (tuning.go, which also holds the shared-memory bounds). GOMPIX_<COLL>_ALGORITHM forces a choice
// (see Vars); a forced algorithm that cannot run the call falls back to the
// selected one, with a warning through Options.Warn.
//
// # Tags
//
// A State, one per communicator, numbers the collectives started on it; the
// n-th collective uses tag n mod 2^23 for all of its messages. Collectives on
// a communicator are started in the same order on every rank (MPI's rule), so
// several nonblocking collectives can be in flight at once without their
// messages mixing. Within one collective, two ranks exchange messages in the
// same order on both sides, which the Comm's non-overtaking rule preserves.
//
// # Progress
//
// A collective advances only when someone calls Test or Wait. MPI's progress
// rule asks more: a rank blocked on one request must keep every other
// operation in flight moving, or two ranks blocked on different nonblocking
// collectives could wait for each other forever. So every request belongs to
// a Progress domain (one per process; Options.Progress, a package-wide one
// by default), and each Test also gives the domain's other schedules a turn.
// Wait blocks inside the Comm (the point-to-point layer's wait policy) only
// when its schedule is alone in the domain; otherwise it Tests in a loop and
// lets a Comm that implements Idler spin, yield or sleep between passes.
//
// # Buffers
//
// Counts are in elements of a dtype.Type; buffers are byte slices at least as
// long as the call needs (longer is fine: bytes past the needed length are
// never read or written). InPlace (a nil send buffer, or a nil receive buffer
// for the root of Scatter/Scatterv) selects MPI's in-place variant where MPI
// has one; see each method. Data is in the host's byte order.
//
// # Concurrency
//
// A State is not safe for concurrent use: the caller (package mpi) starts
// the collectives of one communicator under its own lock, in the same order
// on every rank. A Request returned by a State may be tested or waited on
// from any goroutine, one at a time, independently of the State and of other
// requests; it touches only its own schedule and the Comm requests it
// posted, so the Comm's Isend, Irecv and Request methods must be safe for use
// from several goroutines.
//
// # Errors
//
// Errors wrap classes callers test with errors.Is: ErrRoot (MPI_ERR_ROOT),
// ErrBuffer (MPI_ERR_BUFFER), dtype.ErrCount (MPI_ERR_COUNT, also what a
// message of the wrong size yields when the Comm reports received counts),
// dtype.ErrOp and dtype.ErrType, and whatever the Comm returns (truncation,
// for example) underneath the collective's context. Nothing here panics,
// exits or writes to stdout on bad input. A collective that fails midway
// stops there: receives it had already posted may still complete into its
// buffers, and its peers may be left waiting (as in MPI, where errors in
// collectives are generally not recoverable).
package coll
