// Package pmix is a client of PMIx, the process-management interface of
// Open MPI's launchers (mpirun, prterun) and of Slurm's srun --mpi=pmix,
// through the system's own libpmix, loaded at run time with dlopen: a
// gompix binary has no build or link dependency on PMIx, and one built
// where libpmix is absent runs everywhere; Init then fails with an error
// matching ErrNoLibrary.
//
// It declares the few C types it passes (pmix_proc_t, pmix_value_t,
// pmix_info_t, pmix_byte_object_t) itself, laid out as the PMIx standard
// fixes them, and calls PMIx_Init, PMIx_Get, PMIx_Put, PMIx_Commit,
// PMIx_Fence, PMIx_Finalize and PMIx_Abort. Values PMIx returns are
// released inside the C call that reads them.
//
// Layer: internal, below internal/bootstrap; it imports the standard
// library only and is one of the packages that say import "C"
// (docs/design/architecture.md §1). No C type appears in an exported name.
//
// Concurrency: the PMIx client library is thread-safe; a Client may be used
// from several goroutines. Fence blocks its goroutine (and OS thread) inside
// libpmix until every rank has arrived.
package pmix
