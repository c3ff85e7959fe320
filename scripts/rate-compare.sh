#!/bin/bash
# rate-compare.sh: the small-message rate of gompix against Open MPI on
# this machine, in interleaved rounds: `osu bw` at 8 B (MB/s) and
# `osu mbw_mr` at 8 B (messages/s; Open MPI's is its 8-byte bw over 8, as
# mpi_bench has no mbw_mr). Open MPI runs over UCX with
# mpi_yield_when_idle and unbound, as on a machine shared with other jobs.
# Each line is one run: "round <r> <what> 8 gompix <v> ompi <v>";
# scripts/host-summary.py makes medians of them.
#
#   make build && mpicc -O2 -o /tmp/mpi_bench scripts/mpi_bench.c
#   scripts/rate-compare.sh [rounds] | tee /tmp/rate.txt
#   scripts/host-summary.py /tmp/rate.txt
#
# BASE=<dir> (a gompirun and gompix built from another commit, as for
# host-compare.sh) adds "base <v>" to each line. ITERS=<n> passes -i to
# the OSU runs. SCHED=1 adds, per run and rank, a line
# "sched <r> <impl> <pid> run <ms> wait <ms> life <ms>": how long the
# rank's busiest thread (the one its goroutine is locked to) ran, how
# long it waited, runnable, for a CPU
# (/proc/<pid>/schedstat, read until it exits), and how long the process
# lived: the rest of its life that thread slept.
set -u
rounds=${1:-5}
G="bin/gompirun"
X="bin/gompix"
B=${MPI_BENCH:-/tmp/mpi_bench}
M="mpirun.openmpi --allow-run-as-root --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
M="$M --mca mpi_yield_when_idle 1 --bind-to none"
BASE=${BASE:-}
osu=(-m 8:8)
[ -n "${ITERS:-}" ] && osu+=(-i "$ITERS")
sched=${SCHED:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# watch CMD...: CMD, with SCHED its main thread's schedstat kept in $tmp.
watch() {
	[ -z "$sched" ] && exec "$@"
	local t0=$EPOCHREALTIME
	"$@" &
	local p=$!
	# jobs -r, not kill -0: a pid is soon reused on a busy machine.
	while [ -n "$(jobs -pr)" ]; do
		s=$(cat /proc/"$p"/task/*/schedstat 2>/dev/null | sort -n | tail -1)
		[ -n "$s" ] && echo "$s $t0 $EPOCHREALTIME" >"$tmp/s.$p"
		sleep 0.01
	done
	wait "$p"
}
export -f watch
export sched tmp
W=(bash -c 'watch "$@"' watch)

# schedlines R IMPL: the sched lines of the runs since the last call.
schedlines() {
	[ -z "$sched" ] && return
	for f in "$tmp"/s.*; do
		[ -e "$f" ] || continue
		awk -v r="$1" -v i="$2" -v p="${f##*.}" '{ printf "sched %s %s %s run %.1f wait %.1f life %.1f\n", r, i, p, $1/1e6, $2/1e6, ($5-$4)*1e3 }' "$f"
		rm -f "$f"
	done
}

# gx DIR WHAT: the value at 8 B of an OSU run of the gompix in DIR.
gx() {
	"$1/gompirun" -n 2 --oversubscribe "${W[@]}" "$1/gompix" osu "$2" "${osu[@]}" |
		awk -v c="$([ "$2" = bw ] && echo 2 || echo 3)" '$1 == 8 { print $c }'
}

gdir=$(dirname "$G")
for r in $(seq 1 "$rounds"); do
	for what in bw mbw_mr; do
		g=$(gx "$gdir" "$what")
		schedlines "$r" "gompix-$what"
		b=""
		if [ -n "$BASE" ]; then
			b=" base $(gx "$BASE" "$what")"
			schedlines "$r" "base-$what"
		fi
		o=$($M -n 2 "${W[@]}" "$B" bw 8 2>&1 | awk '$1 == "bw" && $2 == 8 { print $3 }')
		schedlines "$r" "ompi-$what"
		[ "$what" = mbw_mr ] && o=$(awk -v b="$o" 'BEGIN { printf "%.0f", b * 1e6 / 8 }')
		echo "round $r $what 8 gompix $g ompi $o$b"
	done
done
