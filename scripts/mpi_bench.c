// mpi_bench.c: a C MPI program that times what `gompix osu` times, so that
// another MPI (Open MPI, MPICH) can be measured beside gompix in the same
// session on the same machine (docs/performance.md). It follows OSU
// 7.4's loops and defaults, written here from their description, not
// copied:
//   latency   ping-pong between ranks 0 and 1; one-way time = round trip / 2
//             (10000 iterations + 100 warm-up up to 8 KiB, then 1000 + 10)
//   bw        rank 0 sends a window of 64 nonblocking messages, rank 1
//             answers the window with a 4-byte message; MB/s (10^6 bytes)
//             over the iterations (100 + 10 up to 8 KiB, then 20 + 2)
//   <coll>    allreduce, bcast, reduce, allgather, alltoall, barrier: each
//             iteration times one call on every rank, then a barrier; the
//             reported time is the average over ranks of the mean per call
//             (1000 iterations + 100 warm-up up to 8 KiB, then 100 + 10)
// Datatype MPI_CHAR (OSU's default), MPI_SUM for reductions, root 0.
// Like OSU, rank 0 prints its header before the first timed loop (and each
// row after its loop): on a machine with as many cores as ranks, the
// launcher waking to relay output takes a core from a spinning rank, and
// both programs should pay that alike.
// Build and run (Open MPI over UCX, as scripts/host-compare.sh runs it):
//   mpicc -O2 -o /tmp/mpi_bench scripts/mpi_bench.c
//   mpirun.openmpi --allow-run-as-root -n 2 --mca pml ucx --mca pml_ucx_tls any \
//       --mca pml_ucx_devices any /tmp/mpi_bench allreduce 8 1024 65536 1048576
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void iters(long size, int coll, int *n, int *skip) {
    if (size <= 8192) {
        *n = coll ? 1000 : 10000;
        *skip = coll ? 100 : 100;
    } else {
        *n = coll ? 100 : 1000;
        *skip = 10;
    }
}

static double latency(long size, char *s, char *r, int rank) {
    int n, skip;
    iters(size, 0, &n, &skip);
    double t0 = 0;
    for (int i = 0; i < n + skip; i++) {
        if (i == skip) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            MPI_Send(s, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(r, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(r, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

#define WINDOW 64

static double bandwidth(long size, char *s, char *r, int rank) {
    int n = size <= 8192 ? 100 : 20, skip = size <= 8192 ? 10 : 2;
    MPI_Request req[WINDOW];
    char ack[4];
    double t0 = 0;
    for (int i = 0; i < n + skip; i++) {
        if (i == skip) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(s, (int)size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(r, (int)size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    return (double)size * WINDOW * n / t / 1e6;
}

static void call(const char *coll, long size, char *s, char *r, int p) {
    int c = (int)size;
    if (!strcmp(coll, "allreduce"))
        MPI_Allreduce(s, r, c, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "bcast"))
        MPI_Bcast(s, c, MPI_CHAR, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce"))
        MPI_Reduce(s, r, c, MPI_CHAR, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather"))
        MPI_Allgather(s, c, MPI_CHAR, r, c, MPI_CHAR, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall"))
        MPI_Alltoall(s, c, MPI_CHAR, r, c, MPI_CHAR, MPI_COMM_WORLD);
    else
        MPI_Barrier(MPI_COMM_WORLD);
    (void)p;
}

static double collective(const char *coll, long size, char *s, char *r, int p) {
    int n, skip;
    iters(size, 1, &n, &skip);
    double total = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n + skip; i++) {
        double t = MPI_Wtime();
        call(coll, size, s, r, p);
        t = MPI_Wtime() - t;
        if (i >= skip) total += t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine = total * 1e6 / n, sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / p;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpi_bench latency|bw|allreduce|bcast|reduce|allgather|alltoall|barrier SIZE...\n");
        MPI_Finalize();
        return 2;
    }
    const char *what = argv[1];
    if (rank == 0) {
        printf("# mpi_bench %s\n# Size       %s\n", what, strcmp(what, "bw") ? "Avg Latency(us)" : "Bandwidth (MB/s)");
        fflush(stdout);
    }
    long max = 0;
    for (int i = 2; i < argc; i++) max = atol(argv[i]) > max ? atol(argv[i]) : max;
    char *s = calloc((size_t)(max * p + 1), 1), *r = calloc((size_t)(max * p + 1), 1);
    if (!strcmp(what, "barrier")) {
        double t = collective("barrier", 0, s, r, p);
        if (rank == 0) printf("barrier %.2f\n", t);
    }
    for (int i = 2; i < argc; i++) {
        long size = atol(argv[i]);
        double t = !strcmp(what, "latency") ? latency(size, s, r, rank)
                   : !strcmp(what, "bw")    ? bandwidth(size, s, r, rank)
                                            : collective(what, size, s, r, p);
        if (rank == 0) {
            printf("%s %ld %.2f\n", what, size, t);
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
