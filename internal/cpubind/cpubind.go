// Package cpubind places a thread on one core: the cores a process may run
// on (its affinity mask, grouped by the kernel's CPU topology, so that two
// hardware threads of one core count once) and the binding of the calling
// thread to one of their CPUs.
//
// Package mpi binds the thread that runs each rank, one core per rank of
// a node, as mpirun does by default: two ranks that the kernel leaves on
// one core for a while pay a context switch per message. Only that thread
// is bound: the Go runtime's other threads (the garbage collector's, the
// monitor) stay free to run anywhere, where binding the whole process would
// make them share the rank's core. Where the ranks outnumber the CPUs, every
// CPU is shared anyway, and package mpi binds each rank's whole process
// (BindProcess) to one CPU in turn, which beats the kernel's placement
// (docs/design/go-runtime.md, "CPU binding").
//
// Layer: a leaf (standard library only).
package cpubind

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrUnsupported is returned where the system has no thread affinity this
// package knows how to set.
var ErrUnsupported = errors.New("cpubind: thread affinity is not supported on this system")

// sysfs is where the CPU topology is read (a variable for tests).
var sysfs = "/sys/devices/system/cpu"

// Cores returns the CPUs of allowed grouped by physical core (package and
// core id from sysfs), cores in order of their lowest CPU, CPUs in
// increasing order. A CPU whose topology cannot be read is a core of its
// own.
func Cores(allowed []int) [][]int {
	type key struct{ pkg, core int }
	byCore := map[key][]int{}
	var order []key
	for _, cpu := range allowed {
		k := key{-1, -1 - cpu}
		p, err1 := readInt(filepath.Join(sysfs, fmt.Sprintf("cpu%d", cpu), "topology", "physical_package_id"))
		c, err2 := readInt(filepath.Join(sysfs, fmt.Sprintf("cpu%d", cpu), "topology", "core_id"))
		if err1 == nil && err2 == nil {
			k = key{p, c}
		}
		if _, seen := byCore[k]; !seen {
			order = append(order, k)
		}
		byCore[k] = append(byCore[k], cpu)
	}
	out := make([][]int, 0, len(order))
	for _, k := range order {
		cpus := byCore[k]
		sort.Ints(cpus)
		out = append(out, cpus)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// ForCrowdedRank picks the CPU for rank localRank where the ranks of a
// node outnumber its CPUs: the allowed CPUs in turn (rank r on CPU r mod
// n of n), so that each CPU runs a fixed set of ranks.
func ForCrowdedRank(localRank int) (cpu int, ok bool, err error) {
	allowed, err := Allowed()
	if err != nil || len(allowed) == 0 || localRank < 0 {
		return 0, false, err
	}
	return allowed[localRank%len(allowed)], true, nil
}

// ForRank picks the CPU for rank localRank of localSize ranks on this
// node: the first CPU of core localRank among the cores the process may
// use. ok is false when the ranks outnumber those cores (binding would
// then only pin the crowding in place) or there is nothing to choose.
func ForRank(localRank, localSize int) (cpu int, ok bool, err error) {
	allowed, err := Allowed()
	if err != nil {
		return 0, false, err
	}
	cores := Cores(allowed)
	if localSize < 1 || localRank < 0 || localRank >= localSize || localSize > len(cores) {
		return 0, false, nil
	}
	return cores[localRank][0], true, nil
}
