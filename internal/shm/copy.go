package shm

// Copy copies min(len(dst), len(src)) bytes from src to dst, as the
// built-in copy does, and returns that count. The shared-memory
// collectives copy their data into and out of the segment with it.
//
// Why not copy: where the destination's lines were last read by another
// core (a slot its reader read at an earlier call), the built-in copy's
// vector stores each first fetch the line from that core, one round trip
// per line. A string move (REP MOVSB on x86-64 with fast string moves,
// ERMS) writes whole lines without fetching them. From 1 MiB the built-in
// copy's non-temporal stores do as well, and below 1 KiB its start costs
// less (copyStringMin,
// copyStringMax).
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n >= copyStringMin && n < copyStringMax && stringMove(dst[:n], src[:n]) {
		return n
	}
	return copy(dst, src)
}

const (
	copyStringMin = 1 << 10
	copyStringMax = 1 << 20
)
