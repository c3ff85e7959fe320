// nccl_bench.c: NCCL's side of gompix's GPU collective comparison
// (docs/performance.md). One process per GPU, started by gompirun
// (GOMPIX_RANK / GOMPIX_SIZE); rank 0 publishes the NCCL unique id in a
// file. For each size from MIN to MAX bytes (doubling), float32 data: warm
// up, then time ITERS back-to-back operations on one stream with CUDA
// events, and print the average time per operation and nccl-tests' algbw
// and busbw. Build where NCCL is installed:
//   nvcc -O2 -o nccl_bench scripts/nccl_bench.c -lnccl
// Run:
//   gompirun -n 2 ./nccl_bench allreduce 8 536870912 /tmp/nccl.id [sync]
// With "sync", every operation is followed by cudaStreamSynchronize and
// the loop is timed on the host: the latency an MPI-style blocking call
// would see, comparable with OSU's (the default, back-to-back, is how
// nccl-tests measure).
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); exit(1); } } while (0)

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s allreduce|reduce_scatter|allgather|bcast MIN MAX IDFILE\n", argv[0]);
        return 2;
    }
    const char *coll = argv[1];
    size_t minb = strtoull(argv[2], 0, 10), maxb = strtoull(argv[3], 0, 10);
    const char *idfile = argv[4];
    int sync = argc > 5 && !strcmp(argv[5], "sync");
    int rank = atoi(getenv("GOMPIX_RANK")), n = atoi(getenv("GOMPIX_SIZE"));
    int ngpu = 0;
    CK(cudaGetDeviceCount(&ngpu));
    CK(cudaSetDevice(rank % ngpu));
    ncclUniqueId id;
    if (rank == 0) {
        NK(ncclGetUniqueId(&id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", idfile);
        FILE *f = fopen(tmp, "wb");
        fwrite(&id, sizeof id, 1, f);
        fclose(f);
        rename(tmp, idfile);
    } else {
        FILE *f = 0;
        while (!(f = fopen(idfile, "rb"))) usleep(1000);
        if (fread(&id, sizeof id, 1, f) != 1) { fprintf(stderr, "bad id file\n"); return 1; }
        fclose(f);
    }
    ncclComm_t comm;
    NK(ncclCommInitRank(&comm, n, id, rank));
    if (rank == 0) unlink(idfile);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *sb, *rb;
    CK(cudaMalloc(&sb, maxb * n));
    CK(cudaMalloc(&rb, maxb * n));
    CK(cudaMemset(sb, 0, maxb * n));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (rank == 0) printf("# NCCL %d, %d ranks, %s, float32, out of place, %s\n# %12s %12s %10s %10s\n",
                          NCCL_VERSION_CODE, n, coll, sync ? "synchronised after every operation (host-timed)" : "back to back (event-timed)",
                          "bytes", "time(us)", "algbw", "busbw");
    for (size_t bytes = minb; bytes <= maxb; bytes *= 2) {
        size_t count = bytes / 4;
        if (count == 0) continue;
        int iters = bytes <= (1 << 20) ? 1000 : bytes <= (64 << 20) ? 100 : 20;
        double factor = 1, t0 = 0;
        for (int it = -10; it < iters; it++) {
            if (it == 0) {
                CK(cudaStreamSynchronize(s));
                t0 = now_us();
                CK(cudaEventRecord(e0, s));
            }
            if (!strcmp(coll, "allreduce")) {
                NK(ncclAllReduce(sb, rb, count, ncclFloat, ncclSum, comm, s));
                factor = 2.0 * (n - 1) / n;
            } else if (!strcmp(coll, "reduce_scatter")) {
                // bytes is each rank's input, as for OSU's reduce_scatter
                NK(ncclReduceScatter(sb, rb, count / n, ncclFloat, ncclSum, comm, s));
                factor = (double)(n - 1) / n;
            } else if (!strcmp(coll, "allgather")) {
                NK(ncclAllGather(sb, rb, count, ncclFloat, comm, s));
                factor = (double)(n - 1) / n;
            } else {
                NK(ncclBroadcast(sb, rb, count, ncclFloat, 0, comm, s));
            }
            if (sync) CK(cudaStreamSynchronize(s));
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        double us = sync ? (now_us() - t0) / iters : ms * 1000.0 / iters;
        // nccl-tests' convention: algbw over the whole vector (allgather: n blocks).
        double total = !strcmp(coll, "allgather") ? (double)bytes * n : (double)bytes;
        double algbw = total / us / 1000.0;
        if (rank == 0) printf("  %12zu %12.2f %10.2f %10.2f\n", bytes, us, algbw, algbw * factor);
    }
    ncclCommDestroy(comm);
    return 0;
}
