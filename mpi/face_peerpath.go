package mpi

import "github.com/gompix/gompix/mpi/internal/core"

// PeerPaths describes, one line per other rank of the world, how this rank
// reaches it: same node or not and why, the UCX transports of the endpoint
// (made now where no message has made it yet), the shared memory the two
// have, and the path device buffers take. GOMPIX_DEBUG=path prints the
// lines at Init; `gompix info --peers` gathers every rank's.
func PeerPaths() ([]string, error) {
	lines, err := core.PeerPaths()
	return lines, face(err)
}
