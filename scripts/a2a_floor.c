// a2a_floor: what a single-copy alltoall can cost on this node, without any
// MPI library: P forked processes (rank r bound to CPU r mod the allowed
// CPUs, as gompirun binds ranks that outnumber the cores), every rank's
// buffers known to the others from the start, no handshake beyond an
// "arrived" word per rank in shared memory.
//
// Each iteration, as OSU's osu_alltoall times it (a barrier between
// calls, each rank's time from its own start to its own end, averaged):
// a rank marks its arrival, copies its own block (memcpy), then for each
// peer in turn (r+1, r+2, ...) waits until the peer has arrived and moves
// the block between them with one kernel copy, and finally waits until
// every peer has moved its block for this rank. Waits yield the processor
// (sched_yield), as an MPI library waits when ranks outnumber cores.
//
//   pull: the receiver reads the sender's block (process_vm_readv), which is
//         what a rendezvous over CMA does (UCX's get, Open MPI's vader).
//   push: the sender writes its block into the receiver's buffer
//         (process_vm_writev), which is what gompix's single-copy alltoall
//         does.
//
// Usage: a2a_floor [pull|push] [block bytes] [iterations] [ranks]
// (defaults: push, 1048576, 100 after 10 untimed, 4). Prints
// "<mode> <bytes> <avg µs>" and each rank's average.
//
//   gcc -O2 -o /tmp/a2a_floor scripts/a2a_floor.c
//
// docs/performance.md, "History" (2026-12-01): on the 2-vCPU development machine, 4
// ranks, 1 MiB blocks, push 538 µs and pull 597-671 µs, against Open MPI
// (pull) 600-643 in the same rounds.
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXP 16

// One cache line per word a rank writes and others poll.
struct line {
	_Atomic long v;
	char pad[56];
};

struct shared {
	struct line arrived[MAXP]; // iteration a rank has arrived at (1-based)
	struct line moved[MAXP];   // blocks moved for this rank, all iterations
	struct line count;         // barrier arrivals
	struct line gen;           // barrier generation
	pid_t pid[MAXP];
	char *send[MAXP], *recv[MAXP];
	double avg[MAXP];
};

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

// barrier: the last rank to arrive starts the next generation.
static void barrier(struct shared *s, int p, long *gen) {
	long g = *gen;
	if (atomic_fetch_add(&s->count.v, 1) == p - 1) {
		atomic_store(&s->count.v, 0);
		atomic_store(&s->gen.v, g + 1);
	} else {
		while (atomic_load(&s->gen.v) == g)
			sched_yield();
	}
	*gen = g + 1;
}

int main(int argc, char **argv) {
	int push = argc < 2 || strcmp(argv[1], "push") == 0;
	size_t n = argc > 2 ? strtoul(argv[2], 0, 10) : 1 << 20;
	int iters = argc > 3 ? atoi(argv[3]) : 100, skip = 10;
	int p = argc > 4 ? atoi(argv[4]) : 4;
	if ((argc > 1 && !push && strcmp(argv[1], "pull") != 0) || p < 2 || p > MAXP || iters < 1 || n == 0) {
		fprintf(stderr, "usage: a2a_floor [pull|push] [block bytes] [iterations] [ranks 2-%d]\n", MAXP);
		return 2;
	}
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
		perror("sched_getaffinity");
		return 1;
	}
	int cpus[CPU_SETSIZE], ncpu = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;

	struct shared *s = mmap(0, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	int r = 0;
	while (r < p - 1 && fork() != 0)
		r++; // the parent is rank p-1, child i is rank i
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpus[r % ncpu], &one);
	sched_setaffinity(0, sizeof one, &one);

	char *send = malloc(n * p), *recv = malloc(n * p);
	if (!send || !recv) {
		perror("malloc");
		return 1;
	}
	memset(send, r + 1, n * p);
	memset(recv, 0, n * p);
	s->pid[r] = getpid();
	s->send[r] = send;
	s->recv[r] = recv;
	long gen = 0;
	barrier(s, p, &gen);

	double total = 0;
	for (int it = 1; it <= iters + skip; it++) {
		double t0 = now();
		atomic_store(&s->arrived[r].v, it);
		memcpy(recv + r * n, send + r * n, n);
		for (int i = 1; i < p; i++) {
			int q = (r + i) % p;
			while (atomic_load(&s->arrived[q].v) < it)
				sched_yield();
			struct iovec local, remote;
			ssize_t got;
			if (push) {
				local = (struct iovec){send + q * n, n};
				remote = (struct iovec){s->recv[q] + r * n, n};
				got = process_vm_writev(s->pid[q], &local, 1, &remote, 1, 0);
				atomic_fetch_add(&s->moved[q].v, 1);
			} else {
				local = (struct iovec){recv + q * n, n};
				remote = (struct iovec){s->send[q] + r * n, n};
				got = process_vm_readv(s->pid[q], &local, 1, &remote, 1, 0);
				atomic_fetch_add(&s->moved[q].v, 1); // q's block is read
			}
			if (got != (ssize_t)n) {
				perror(push ? "process_vm_writev" : "process_vm_readv");
				exit(1);
			}
		}
		// push: every peer has written into recv; pull: every peer has
		// read from send.
		while (atomic_load(&s->moved[r].v) < (long)(p - 1) * it)
			sched_yield();
		if (it > skip)
			total += now() - t0;
		barrier(s, p, &gen);
	}
	for (int q = 0; q < p; q++)
		if (q != r && recv[q * n] != q + 1) {
			fprintf(stderr, "rank %d: block from %d holds %d\n", r, q, recv[q * n]);
			exit(1);
		}
	s->avg[r] = total / iters * 1e6;
	barrier(s, p, &gen);
	if (r == p - 1) {
		int status, bad = 0;
		while (wait(&status) > 0)
			bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		double a = 0;
		for (int q = 0; q < p; q++)
			a += s->avg[q];
		printf("%s %zu %.2f  ranks", push ? "push" : "pull", n, a / p);
		for (int q = 0; q < p; q++)
			printf(" %.1f", s->avg[q]);
		printf("\n");
		return bad;
	}
	return 0;
}
