#!/usr/bin/env bash
# compare.sh [ROUNDS]: gompix against Open MPI across two rig nodes, in
# interleaved rounds (scripts/rig/rig.sh up 2 first; root). Each line is one
# measurement: "round R WHAT SIZE gompix V ompi V ob1 V" — launch: seconds
# for `-n 4 hostname` over node1:2,node2:2; latency (µs) and bw (MB/s):
# one rank on each node; allreduce (µs): two ranks on each node. Open MPI
# runs over UCX ("ompi": pml ucx, which takes UCX's tcp transport between
# the nodes, as gompix does) and with its default ob1/tcp ("ob1"), unbound
# (bound ranks of different nodes share the machine's cores and starve its
# network: docs/guide/multi-node-rig.md; gompix leaves its crowded 2 x 2
# ranks unbound for the same reason) and yielding when idle (four ranks
# share two CPUs). scripts/host-summary.py makes medians of the lines.
# GOMPIX_RIG_BIN runs another build's gompirun and gompix (default: bin/);
# GOMPIX_RIG_ARGS adds gompirun options (-x NAME=VALUE).
#
#   make build && mpicc -O2 -o /tmp/mpi_bench scripts/mpi_bench.c
#   scripts/rig/compare.sh 5 | tee /tmp/rc.txt; scripts/host-summary.py /tmp/rc.txt
set -u
rounds=${1:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
net=${GOMPIX_RIG_NET:-10.77.0}
B=${MPI_BENCH:-/tmp/mpi_bench}
bin=${GOMPIX_RIG_BIN:-$root/bin}
G="$bin/gompirun --launch-agent $here/rig-agent --iface $net.0/24 ${GOMPIX_RIG_ARGS:-}"
X="$bin/gompix"
O="$here/ompi-run.sh --bind-to none --mca mpi_yield_when_idle 1"
U="$O --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self,sm"
H2="-H node1:1,node2:1"
H4="-H node1:2,node2:2"

field() { awk -v s="$1" '$1 == s { print $2 }'; }
bfield() { awk -v c="$1" -v s="$2" '$1 == c && $2 == s { print $3 }'; }
secs() { local t0; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $t0" | bc; }

for r in $(seq 1 "$rounds"); do
	echo "round $r launch 4 gompix $(secs $G $H4 hostname) ompi $(secs $U $H4 hostname) ob1 $(secs $O $H4 hostname)"
	g=$($G $H2 $X osu latency -m 8:65536)
	o=$($U $H2 $B latency 8 1024 65536 2>&1)
	v=$($O $H2 $B latency 8 1024 65536 2>&1)
	for s in 8 1024 65536; do
		echo "round $r latency $s gompix $(echo "$g" | field $s) ompi $(echo "$o" | bfield latency $s) ob1 $(echo "$v" | bfield latency $s)"
	done
	g=$($G $H2 $X osu bw -m 8:4194304)
	o=$($U $H2 $B bw 8 65536 4194304 2>&1)
	v=$($O $H2 $B bw 8 65536 4194304 2>&1)
	for s in 8 65536 4194304; do
		echo "round $r bw $s gompix $(echo "$g" | field $s) ompi $(echo "$o" | bfield bw $s) ob1 $(echo "$v" | bfield bw $s)"
	done
	g=$($G $H4 $X osu allreduce -m 8:1048576)
	o=$($U $H4 $B allreduce 8 65536 1048576 2>&1)
	v=$($O $H4 $B allreduce 8 65536 1048576 2>&1)
	for s in 8 65536 1048576; do
		echo "round $r allreduce/2x2 $s gompix $(echo "$g" | field $s) ompi $(echo "$o" | bfield allreduce $s) ob1 $(echo "$v" | bfield allreduce $s)"
	done
done
