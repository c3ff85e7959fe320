/* c2c_probe.c: the machine's core-to-core state. Two threads, pinned to
 * CPUs 0 and 1, hand one cache line back and forth; prints the mean round
 * trip in ns. The development VM shows two levels (about 120 ns and
 * 450-550 ns; docs/performance.md, "Method"), which move every
 * shared-memory number with them: scripts/host-compare.sh prints it before
 * each round when built.
 *
 *   gcc -O2 -o /tmp/c2c_probe scripts/c2c_probe.c -lpthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 200000

static _Alignas(64) atomic_long turn;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *unused)
{
	(void)unused;
	pin(1);
	for (long i = 0; i < ROUNDS; i++) {
		while (atomic_load(&turn) != 2 * i + 1)
			;
		atomic_store(&turn, 2 * i + 2);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	struct timespec a, b;
	pin(0);
	pthread_create(&t, NULL, answer, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < ROUNDS; i++) {
		atomic_store(&turn, 2 * i + 1);
		while (atomic_load(&turn) != 2 * i + 2)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(t, NULL);
	printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ROUNDS);
	return 0;
}
