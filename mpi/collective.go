package mpi

// collRequest is the part of a nonblocking collective a Request drives.
type collRequest interface {
	Test() (bool, error)
	Wait() error
}

// collState is a communicator's collective state (sequence numbers).
type collState struct{}
