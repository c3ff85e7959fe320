package pt2pt

// Error classes of groups and process topologies (raised by package mpi's
// communicator constructors; defined here so that every class is a Class
// with its MPI code).
var (
	ErrGroup    = &Class{"MPI_ERR_GROUP: invalid group", 8}
	ErrTopology = &Class{"MPI_ERR_TOPOLOGY: invalid topology", 10}
	ErrDims     = &Class{"MPI_ERR_DIMS: invalid dimension argument", 11}
)
