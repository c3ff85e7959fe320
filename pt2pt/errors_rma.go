package pt2pt

// Error classes of one-sided communication (package osc), with MPICH's
// codes as the other classes have.
var (
	ErrWin         = &Class{"MPI_ERR_WIN: invalid window", 45}
	ErrBase        = &Class{"MPI_ERR_BASE: invalid base address", 46}
	ErrLockType    = &Class{"MPI_ERR_LOCKTYPE: invalid lock type", 47}
	ErrRMAConflict = &Class{"MPI_ERR_RMA_CONFLICT: conflicting accesses to a window", 49}
	ErrRMASync     = &Class{"MPI_ERR_RMA_SYNC: one-sided call outside its synchronization", 50}
	ErrSize        = &Class{"MPI_ERR_SIZE: invalid size", 51}
	ErrDisp        = &Class{"MPI_ERR_DISP: invalid displacement unit", 52}
	ErrRMARange    = &Class{"MPI_ERR_RMA_RANGE: target memory outside the window", 55}
	ErrRMAAttach   = &Class{"MPI_ERR_RMA_ATTACH: memory cannot be attached", 56}
	ErrRMAShared   = &Class{"MPI_ERR_RMA_SHARED: memory cannot be shared", 57}
	ErrRMAFlavor   = &Class{"MPI_ERR_RMA_FLAVOR: wrong window flavor for the call", 58}
)
