package mpi

import (
	"runtime"

	"github.com/gompix/gompix/internal/cpubind"
)

// bindRank binds the calling goroutine's thread to its own core, one per
// local rank (GOMPIX_BIND=auto; internal/cpubind says why only that
// thread). The goroutine stays locked to the thread: the program's main
// goroutine, which called Init, then always runs on the rank's core. A
// system where that cannot be done keeps running unbound.
func bindRank(localRank, localSize int) {
	cpu, ok, err := cpubind.ForRank(localRank, localSize)
	if err != nil || !ok {
		return
	}
	runtime.LockOSThread()
	if cpubind.BindThread(cpu) != nil {
		runtime.UnlockOSThread()
	}
}
