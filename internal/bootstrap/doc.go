// Package bootstrap is how this process joins its job: it finds the
// launcher that started it (gompirun, a PMI-2 server as Slurm's srun
// --mpi=pmi2 and MPICH's Hydra offer, PMIx as Open MPI's mpirun and srun
// --mpi=pmix offer, or none: a singleton), connects, and answers the same
// questions for each: rank and size, this rank's node and its place there,
// a job id for file names, and a put/fence/get key-value store for the
// transport's addresses (KV, which pt2pt/ucx takes as its ucx.KV).
//
// Node identity comes from facts, not from what a launcher says: every rank
// computes a node key (hostname, boot id, the inodes of its IPC and mount
// namespaces: processes that differ in any cannot share /dev/shm or SysV
// memory), the ranks exchange keys through the KV, and ranks with equal keys
// share a node. Where the launcher also said, the facts win (GOMPIX_DEBUG=boot
// reports a disagreement).
//
// Layer: internal, below mpi (docs/design/architecture.md §1); it imports
// internal/wireup, internal/pmi2 and internal/pmix.
//
// Concurrency: a Job's KV may be used from several goroutines (Fences are
// collective: one at a time per rank). Finalize, Abort and Close are called
// once, by the goroutine that ends MPI.
package bootstrap
