package coll

// The names LastAlgorithm gives the shared-memory engine's ways.
const (
	SharedSlotsName  = "shm"             // through the segment's slots
	SharedSingleName = "shm-single-copy" // read from the owner's buffer
)

// LastAlgorithm names how the last call started on s ran: a schedule's
// algorithm, the shared-memory engine (SharedSlotsName, SharedSingleName)
// or the device space's Direct engine (DirectName, "ipc_direct"); "" before
// any call.
// The caller serialises it with s's calls, as it does those.
func (s *State) LastAlgorithm() string { return s.lastAlg }

// noteShared records that a call runs in the segment as m says, and
// returns m.
func (s *State) noteShared(m sharedMode) sharedMode {
	if m == singleCopy {
		s.lastAlg = SharedSingleName
	} else {
		s.lastAlg = SharedSlotsName
	}
	return m
}
