// Package rigtest gives tests the multi-node test rig of scripts/rig: N
// "nodes" on this machine, each a set of namespaces (network, UTS, IPC,
// mount) with its own hostname, /dev/shm and address on a private bridge,
// reached through scripts/rig/rig-agent as ssh would reach a host.
//
// Up brings the rig up, or reuses one that is already up (make rig-up), and
// takes down only a rig it brought up itself: at the test's end, or after
// the package's last test under Main. A machine that cannot make the rig
// (not root, no namespaces, no iproute2) fails the test: rig tests must not
// vanish silently. GOMPIX_RIG=skip turns that failure into a loud skip.
// Slurm (UpSlurm) is opt-in: GOMPIX_RIG_SLURM=1. Under -short, Up skips, as
// the repository's other multi-process tests do.
//
// Layer: a test helper beside the layers; it imports no gompix package and
// only tests import it. Up, UpConfig, UpSlurm and Main are for one test
// goroutine at a time; the scripts serialise concurrent ups and downs
// across test binaries (a lock on the state dir's parent). The guide is
// docs/guide/multi-node-rig.md.
package rigtest
