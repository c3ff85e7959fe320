#!/bin/bash
# Session 15, call 1 (nvidia-h200, one GPU): the harness on 6b36612 (session 14's review mend; main d5ef5ef), two OSU rounds against Open MPI, OSU validation at 3 and 8 ranks.
# internal/dtype and internal/cpuid in the harness;
# the AVX2/SSE2 benchmark; then host collectives against Open MPI (ob1),
# 3 rounds, 2 and 4 ranks; then OSU validation (-c) of reduce and
# allreduce, bcast, allgather, alltoall at 3 and 8 ranks.
set -u
cd .device && tar xzf pack.tgz && cd ..
L=$OUT/all.log
exec > >(tee -a $L) 2>&1
date -u
export NCCL_NVLS_ENABLE=0
export PKGS="internal/cudadrv internal/gputopo kernels mpi pt2pt/gpu stream ucxbind coll/gpu internal/shm internal/cpubind pt2pt/ucx internal/dtype internal/cpuid"
echo "== harness: abi run"
timeout 420 scripts/device-check.sh abi run >/dev/null 2>&1
echo "harness rc=$?"
date -u
for f in $OUT/*.log; do [ "$f" = "$L" ] && continue; echo "--- $f"; grep -E '^(--- FAIL|FAIL|ok|PASS)|^\s+--- FAIL|still running|panic' $f | tail -5; done
grep -E '^\s+--- (PASS|FAIL): TestStreamGPU|^--- (PASS|FAIL): TestDevice(Coll|Point)|^--- (PASS|FAIL): TestForcedAlgorithms|^--- (PASS|FAIL): TestSharedGPU|^--- (PASS|FAIL): TestColl|^--- (PASS|FAIL): TestBind|^--- (PASS|FAIL): TestSingleCopy|^--- (PASS|FAIL): TestCMAPeers|^--- (PASS|FAIL): TestRecordCPUs' $OUT/mpi.log | head -30
grep -E '^\s+--- (PASS|FAIL): TestBind' $OUT/mpi.log
grep -E '^--- (PASS|FAIL): TestCopy' $OUT/internal_shm.log; grep -E '^--- (PASS|FAIL): TestReduceEveryPair' $OUT/internal_dtype.log
grep -hE "CMA .*memory copy" $OUT/internal_shm.log
grep -m1 -o -w "erms" /proc/cpuinfo; grep -m1 -o -w avx2 /proc/cpuinfo; .device/internal_dtype.test -test.run XXX -test.bench VectorLoops -test.benchtime 2000x 2>&1 | grep Bench; grep -m1 "model name" /proc/cpuinfo
mpicc -O2 -o .device/mpi_bench scripts/mpi_bench.c
M="mpirun --allow-run-as-root"
for r in 1 2; do
for n in 2 4; do
  for c in allreduce bcast reduce allgather alltoall; do
    b=$(timeout 60 .device/gompirun -n $n .device/gompix osu $c -m 8:1048576 | awk '$1==8||$1==1024||$1==65536||$1==1048576{printf "%s ", $2}')
    m=$(timeout 60 $M -n $n .device/mpi_bench $c 8 1024 65536 1048576 2>/dev/null | awk -v c=$c '$1==c{printf "%s ", $3}')
    echo "full $r $c/$n gompix: $b| ompi: $m"
  done
done
done
for n in 3 8; do for c in bcast reduce allreduce allgather alltoall; do
  o=$(timeout 120 .device/gompirun -n $n .device/gompix osu $c -m 1:1048576 -c 2>&1)
  echo -n "$c/$n pass=$(echo "$o" | grep -E '^[0-9]' | grep -c Pass) other=$(echo "$o" | grep -E '^[0-9]' | grep -vc Pass); "; done; echo; done
date -u
cd $OUT && tar czf logs.tgz $(ls *.log | grep -v '^all.log$') && rm -f $(ls *.log | grep -v '^all.log$')
