package core

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

// bindCrowdedRank binds this rank's whole process to one CPU, the node's
// CPUs in turn, where its ranks outnumber them (GOMPIX_BIND=auto): every
// CPU runs a fixed set of ranks instead of the kernel moving them
// (internal/cpubind says why). A system where that cannot be done keeps
// running unbound.
//
// It returns the CPU, -1 where it bound none: the shared-memory
// collectives' peers learn it (Runtime.CrowdedCPU) and so which of them
// share a CPU (coll.Shared.CPUs).
func bindCrowdedRank(localRank int) int {
	if cpu, ok, err := cpubind.ForCrowdedRank(localRank); err == nil && ok && cpubind.BindProcess(cpu) == nil {
		return cpu
	}
	return -1
}

// bindCrowded reports whether a crowded rank is bound to a CPU: not where
// ranks of other nodes share the machine (containers, the rig), whose
// network the kernel carries on those CPUs too; the scheduler places them.
func bindCrowded(machineSize, localSize int) bool { return machineSize <= localSize }
