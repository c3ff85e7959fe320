package osu

import "time"

// epoch is the origin of wtime's readings.
var epoch = time.Now()

// wtime is the port's MPI_Wtime: the time since epoch, from the monotonic
// clock alone. time.Now reads the wall clock as well, nearly doubling the
// cost of a reading, and the collective loops read the clock twice per
// iteration, on the path the other ranks wait on: the peer of a 2-rank
// allreduce waits for this rank's next message through its readings.
func wtime() time.Duration { return time.Since(epoch) }
