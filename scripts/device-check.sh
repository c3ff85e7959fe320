#!/bin/sh
# device-check.sh: the same GPU checks in every session (docs/gpu-machine.md).
#
#   scripts/device-check.sh build      here (no GPU): go test -c each package
#                                      in PKGS into .device/<name>.test
#   scripts/device-check.sh gen        there: kernels/gen.sh "$OUT" (nvcc)
#   scripts/device-check.sh abi        there: compile internal/cudadrv/abi_check.c
#                                      against cuda.h/nvrtc.h (hand-written ABI)
#   scripts/device-check.sh run        there: every .device/*.test with
#                                      GOMPIX_REQUIRE_GPU=1 -test.v, logs in $OUT
#   scripts/device-check.sh bench      there: the benchmarks of BENCH_PKGS
#   scripts/device-check.sh info       there: .device/gompix info (GPUs, links)
#   scripts/device-check.sh shared     there: two ranks on one GPU, without and
#                                      with an MPS daemon: OSU -c validation of
#                                      the device and stream operations (a hang
#                                      is a failure)
#   scripts/device-check.sh mps        there: osu latency -d cuda D D, two
#                                      ranks on GPU 0, with gompirun --mps
#                                      (its own MPS daemon) and without
#   scripts/device-check.sh rig        there (root): two rig nodes inside the
#                                      host (scripts/rig/rig.sh), one rank on
#                                      each, device buffers over the ucx path
#                                      with a UCX built with CUDA (built from
#                                      .device/ucx-src.tar.gz when UCX_PREFIX
#                                      lacks one): OSU -c validation and the
#                                      per-peer path
#
# From a developer machine, after `build`, one device call does it all:
#   run(carry=[".device"], kind="nvidia-h200-x2",
#       command="scripts/device-check.sh abi run bench info")
#
# To add a package, append it to PKGS (and to BENCH_PKGS for benchmarks).
set -u
PKGS=${PKGS:-"internal/cudadrv internal/gputopo kernels coll/gpu mpi mpi/internal/core pt2pt/gpu stream"}
BENCH_PKGS=${BENCH_PKGS:-"kernels"}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-2s}
root=$(cd "$(dirname "$0")/.." && pwd)
dev=$root/.device
out=${OUT:-$root/.device/out}
status=0

# Never let anything started from here use NVLink multicast (docs/gpu-machine.md).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

name() { echo "$1" | tr / _; }

build() {
	mkdir -p "$dev"
	for p in $PKGS; do
		echo "build: $p -> .device/$(name "$p").test"
		(cd "$root" && go test -c -o "$dev/$(name "$p").test" "./$p") || status=1
	done
	# The commands, for info (and for ad-hoc gompirun runs there).
	(cd "$root" && go build -o "$dev/" ./cmd/...) || status=1
	# What the run mode needs beside the binaries.
	cp "$root/scripts/device-check.sh" "$dev/" 2>/dev/null || true
	# The GPU machine has no iproute2; the rig mode brings this machine's
	# ip and the libraries it links (not libc, which is there).
	ipbin=$(command -v ip) && {
		mkdir -p "$dev/iproute/bin" "$dev/iproute/lib"
		cp "$ipbin" "$dev/iproute/bin/"
		ldd "$ipbin" | awk '$3 ~ /^\// && $1 !~ /^(libc|ld-linux)/ { print $3 }' |
			xargs -r -I{} cp -L {} "$dev/iproute/lib/"
	}
}

gen() {
	mkdir -p "$out"
	"$root/kernels/gen.sh" "$out" 2>&1 | tee "$out/gen.log" || status=1
}

abi() {
	mkdir -p "$out"
	cuda=${CUDA_HOME:-/usr/local/cuda}
	{
		gcc -std=c11 -Wall -Werror -c -I"$cuda/include" -I"$root/internal/cudadrv" \
			-o /tmp/gx_abi_check.o "$root/internal/cudadrv/abi_check.c" &&
			echo "abi: gx_cuda.h matches $cuda/include/cuda.h and nvrtc.h (constants and every entry-point type)"
	} >"$out/abi.log" 2>&1 || status=1
	cat "$out/abi.log"
}

run() {
	mkdir -p "$out"
	{ nvidia-smi -L; nvidia-smi topo -m; } >"$out/gpus.log" 2>&1
	for p in $PKGS; do
		bin=$dev/$(name "$p").test
		[ -x "$bin" ] || { echo "run: $bin missing (run build first)"; status=1; continue; }
		log=$out/$(name "$p").log
		echo "run: $p"
		(cd "$root/$p" && GOMPIX_REQUIRE_GPU=1 "$bin" -test.v -test.count=1 -test.timeout=8m) >"$log" 2>&1 ||
			{ status=1; echo "run: $p FAILED (see $log)"; }
		grep -E '^(--- FAIL|FAIL|ok|PASS)' "$log" | tail -n 20
	done
}

info() {
	mkdir -p "$out"
	"$dev/gompix" info >"$out/info.log" 2>&1 || status=1
	cat "$out/info.log"
}

bench() {
	mkdir -p "$out"
	for p in $BENCH_PKGS; do
		bin=$dev/$(name "$p").test
		log=$out/$(name "$p").bench.log
		(cd "$root/$p" && GOMPIX_REQUIRE_GPU=1 "$bin" -test.run '^$' -test.bench "$BENCH" \
			-test.benchtime "$BENCHTIME" -test.benchmem) >"$log" 2>&1 || status=1
		cat "$log"
	done
}

# shared: two ranks on GPU 0, first alone (the driver's time slices), then
# under an MPS daemon started here and stopped after. Each run has a time
# limit: an enqueued operation that deadlocks fails the check.
shared() {
	mkdir -p "$out"
	log=$out/shared.log
	: >"$log"
	for mps in off on; do
		if [ $mps = on ]; then
			nvidia-cuda-mps-control -d || { echo "shared: no MPS daemon" | tee -a "$log"; status=1; return; }
			sleep 1
		fi
		for b in "stream_allreduce -d cuda" "stream_latency -d cuda" "allreduce -d cuda" \
			"bcast -d cuda" "allgather -d cuda" "alltoall -d cuda" "reduce -d cuda" "latency -d cuda D D"; do
			echo "== mps=$mps osu $b" >>"$log"
			if CUDA_VISIBLE_DEVICES=0 timeout 120 "$dev/gompirun" -n 2 --timeout 100 \
				"$dev/gompix" osu $b -c -m 4:65536 >>"$log" 2>&1 && ! grep -q Fail "$log"; then
				echo "shared: mps=$mps osu $b: ok"
			else
				echo "shared: mps=$mps osu $b: FAILED (see $log)"
				status=1
			fi
		done
		if [ $mps = on ]; then
			echo quit | timeout 20 nvidia-cuda-mps-control
			sleep 2
			pkill -9 -f nvidia-cuda-mps 2>/dev/null
		fi
	done
}

# mps: the latency of a device message between two ranks sharing GPU 0,
# under the MPS daemon gompirun --mps starts and stops, and without one.
mps() {
	mkdir -p "$out"
	for m in --mps ""; do
		echo "== gompirun -n 2 $m osu latency -d cuda D D" >>"$out/mps.log"
		CUDA_VISIBLE_DEVICES=0 timeout 200 "$dev/gompirun" -n 2 $m --report-bindings --timeout 180 \
			"$dev/gompix" osu latency -d cuda -m 8:1048576 D D >>"$out/mps.log" 2>&1 ||
			{ echo "mps: gompirun $m FAILED"; status=1; }
	done
	pgrep -f nvidia-cuda-mps >/dev/null && { echo "mps: an MPS daemon outlived the job"; status=1; }
	grep -E "^==|^(8|1024|65536|1048576) |bind|MPS|mps" "$out/mps.log"
}

# rig: the ucx path end to end between two nodes of the multi-node rig on
# this one host. The nodes have their own network, IPC and /dev/shm, so
# gompix sees two nodes and auto sends device buffers to the other by ucx;
# UCX moves them over tcp (cuda_copy staging) or cuda_ipc, as it chooses.
rig() {
	mkdir -p "$out"
	prefix=${UCX_PREFIX:-/tmp/ucx-cuda}
	if [ ! -x "$prefix/bin/ucx_info" ]; then
		"$root/scripts/build-ucx-cuda.sh" build "$prefix" >"$out/ucx-build.log" 2>&1 ||
			{ echo "rig: UCX with CUDA did not build (see $out/ucx-build.log)"; status=1; return; }
	fi
	rigsh() {
		if command -v ip >/dev/null; then "$root/scripts/rig/rig.sh" "$@"; else
			PATH=$dev/iproute/bin:$PATH LD_LIBRARY_PATH=$dev/iproute/lib "$root/scripts/rig/rig.sh" "$@"
		fi
	}
	rigsh up 2 >"$out/rig-up.log" 2>&1 ||
		{ echo "rig: rig.sh up 2 failed"; cat "$out/rig-up.log"; status=1; return; }
	log=$out/rig.log
	: >"$log"
	g="$dev/gompirun --launch-agent $root/scripts/rig/rig-agent --iface 10.77.0.0/24 --timeout 200"
	g="$g -x LD_LIBRARY_PATH=$prefix/lib -x CUDA_VISIBLE_DEVICES=0"
	h="-H node1:1,node2:1"
	for run in "$h -x GOMPIX_DEBUG=path $dev/gompix osu latency -d cuda -c -i 100 -m 1:1048576 D D" \
		"$h $dev/gompix osu bw -d cuda -c -m 1:67108864 D D" \
		"$h $dev/gompix osu allreduce -d cuda -c -m 4:4194304" \
		"$h $dev/gompix osu bcast -d cuda -c -m 4:4194304"; do
		echo "== gompirun $run" >>"$log"
		if timeout 240 $g $run >>"$log" 2>&1 && ! grep -q Fail "$log"; then
			echo "rig: $run: ok"
		else
			echo "rig: $run: FAILED (see $log)"
			status=1
		fi
	done
	# The anchor: UCX's own ucx_perftest on the same pair, interleaved with
	# gompix's osu bw at the same size.
	for s in 1048576 16777216 67108864; do
		echo "== compare bw $s" >>"$log"
		timeout 120 $g $h "$dev/gompix" osu bw -d cuda -m "$s:$s" D D 2>&1 | grep "^$s" |
			awk -v s="$s" '{ print "rig: bw", s, "gompix", $2 }' | tee -a "$log"
		"$root/scripts/rig/rig-agent" node1 "LD_LIBRARY_PATH=$prefix/lib CUDA_VISIBLE_DEVICES=0 timeout 60 $prefix/bin/ucx_perftest -m cuda -t tag_bw -s $s -n 100" >/dev/null 2>&1 &
		sleep 2
		"$root/scripts/rig/rig-agent" node2 "LD_LIBRARY_PATH=$prefix/lib CUDA_VISIBLE_DEVICES=0 timeout 60 $prefix/bin/ucx_perftest 10.77.0.1 -m cuda -t tag_bw -s $s -n 100" 2>&1 |
			awk -v s="$s" '/^Final/ { print "rig: bw", s, "ucx_perftest", $7 }' | tee -a "$log"
		wait
	done
	rigsh down >>"$out/rig-up.log" 2>&1
	grep -E "take path" "$log" | head -4
}

[ $# -gt 0 ] || { sed -n '2,34p' "$0"; exit 2; }
for mode in "$@"; do
	case $mode in
	build | gen | abi | run | bench | info | shared | mps | rig) $mode ;;
	*) echo "device-check.sh: unknown mode $mode" >&2; exit 2 ;;
	esac
done
exit $status
