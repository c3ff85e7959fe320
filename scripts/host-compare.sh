#!/bin/bash
# host-compare.sh: gompix against Open MPI on this machine, in interleaved
# rounds: 8-byte and 1 KiB ping-pong, then the five collectives of issue 3
# at 8 B, 1 KiB, 64 KiB and 1 MiB, at 2 and 4 ranks. Open MPI runs twice:
# over UCX (pml ucx, "ompi") and with Debian's default (pml ob1 with the
# vader shared-memory transport, "ob1"). Each line is one run:
# "round <r> <what> <size> gompix <µs> ompi <µs> ob1 <µs>";
# scripts/host-summary.py makes medians of them.
#
#   make build && mpicc -O2 -o /tmp/mpi_bench scripts/mpi_bench.c
#   scripts/host-compare.sh [rounds] [latency|coll|all] | tee /tmp/hc.txt
#   scripts/host-summary.py /tmp/hc.txt
#
# With BASE=<dir> (a gompirun and gompix built from another commit, e.g.
# `git worktree add /tmp/base <rev> && (cd /tmp/base && go build -o bin/ ./cmd/...)`
# then BASE=/tmp/base/bin), each line also has "base <µs>": before and after
# a change in the same interleaved rounds.
#
# Where /tmp/c2c_probe is built (scripts/c2c_probe.c), each round starts
# with a line "probe <r> <ns>": the machine's core-to-core round trip.
set -u
rounds=${1:-3}
what=${2:-all}
G="bin/gompirun"
X="bin/gompix"
B=${MPI_BENCH:-/tmp/mpi_bench}
M1="mpirun.openmpi --allow-run-as-root"
M="$M1 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
sizes="8 1024 65536 1048576"
BASE=${BASE:-}
extra="" # gompirun options of the current run (--oversubscribe), the base build's too
# base ARGS...: the same OSU run with the BASE build, or nothing.
base() { [ -n "$BASE" ] && "$BASE/gompirun" $extra "${@:1:2}" "$BASE/gompix" "${@:3}"; }
# bcol OUT SIZE: " base <µs>" from base's output, or nothing.
bcol() { [ -n "$BASE" ] && echo " base $(echo "$1" | field "$2")"; }

# field SIZE: the value column of an OSU row of that size (stdin).
field() { awk -v s="$1" '$1 == s { print $2 }'; }
# bfield WHAT SIZE: the value of mpi_bench's row for WHAT at SIZE (stdin).
bfield() { awk -v c="$1" -v s="$2" '$1 == c && $2 == s { print $3 }'; }

P=${C2C_PROBE:-/tmp/c2c_probe}
for r in $(seq 1 "$rounds"); do
	[ -x "$P" ] && echo "probe $r $($P)"
	if [ "$what" != coll ]; then
		g=$($G -n 2 $X osu latency -m 8:1024)
		gb=$(base -n 2 osu latency -m 8:1024)
		o=$($M -n 2 $B latency 8 1024 2>&1)
		v=$($M1 -n 2 $B latency 8 1024 2>&1)
		for s in 8 1024; do
			echo "round $r latency $s gompix $(echo "$g" | field $s) ompi $(echo "$o" | bfield latency $s) ob1 $(echo "$v" | bfield latency $s)$(bcol "$gb" $s)"
		done
	fi
	[ "$what" = latency ] && continue
	for n in 2 4; do
		extra=""
		[ "$n" -gt "$(nproc)" ] && extra="--oversubscribe"
		for c in allreduce bcast reduce allgather alltoall; do
			g=$($G $extra -n $n $X osu $c -m 8:1048576)
			gb=$(base -n $n osu $c -m 8:1048576)
			o=$($M $extra -n $n $B $c $sizes 2>&1)
			v=$($M1 $extra -n $n $B $c $sizes 2>&1)
			for s in $sizes; do
				echo "round $r $c/$n $s gompix $(echo "$g" | field $s) ompi $(echo "$o" | bfield $c $s) ob1 $(echo "$v" | bfield $c $s)$(bcol "$gb" $s)"
			done
		done
	done
done
