// ucx_pingpong.c: the 8-byte ping-pong of `gompix osu latency`, written in C
// over ucxbind's C half (gx.c: the entry points gompix calls, called here
// straight from C: a send, then a receive posted and polled inside one
// call). It measures what the Go side of gompix adds (docs/design/go-runtime.md).
// Two processes exchange worker addresses through files in DIR.
//
//   gcc -O2 -I ucxbind -o /tmp/ucx_pingpong scripts/ucx_pingpong.c ucxbind/gx.c $(pkg-config --cflags --libs ucx)
//   d=$(mktemp -d); /tmp/ucx_pingpong $d 1 100000 & /tmp/ucx_pingpong $d 0 100000; wait
#include "gx.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void recv8(ucp_worker_h w, char *r, gx_wstate *st) {
    for (;;) {
        st->fc = (gx_fcargs){.h = (uintptr_t)w, .buf = (uintptr_t)r, .len = 8, .tag = 1,
                             .mask = ~0ull, .memtype = UCS_MEMORY_TYPE_HOST, .spins = 1024};
        uintptr_t got = gx_fc_recv_now(st);
        if (got == GX_RECV_MATCHED) got = gx_recv_now_finish((uintptr_t)w, (uintptr_t)st);
        if (got) return;
    }
}

static void send8(ucp_worker_h w, ucp_ep_h ep, char *s, gx_wstate *st) {
    st->fc = (gx_fcargs){.h = (uintptr_t)ep, .buf = (uintptr_t)s, .len = 8, .tag = 1,
                         .mode = GX_SEND_STD, .memtype = UCS_MEMORY_TYPE_HOST};
    gx_fc_send(st);
    gx_req *q = st->res.req;
    if (q != NULL) { // not completed inside the call: wait, as a blocking send does
        gx_progress_until((uintptr_t)w, &q->done, 1 << 30, 0);
        gx_req_release(q);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR RANK(0|1) ITERATIONS\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int rank = atoi(argv[2]), n = atoi(argv[3]);
    ucp_context_h ctx;
    ucp_worker_h w;
    if (gx_context_create(1, 2, &ctx) != UCS_OK || gx_worker_create(ctx, 1, &w) != UCS_OK) {
        fprintf(stderr, "ucp init failed\n");
        return 1;
    }
    void *addr;
    size_t alen;
    gx_worker_address(w, &addr, &alen);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/addr.%d", dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        perror(tmp);
        return 1;
    }
    fwrite(addr, 1, alen, f);
    fclose(f);
    rename(tmp, path);
    snprintf(path, sizeof path, "%s/addr.%d", dir, 1 - rank);
    while ((f = fopen(path, "rb")) == NULL)
        usleep(1000);
    static char peer[65536];
    size_t plen = fread(peer, 1, sizeof peer, f);
    fclose(f);
    ucp_ep_h ep;
    if (plen == 0 || gx_ep_create(w, peer, &ep) != UCS_OK) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }
    gx_wstate *st = calloc(1, sizeof *st);
    char s[8] = {0}, r[8];
    const int skip = 1000;
    double t0 = 0;
    for (int i = 0; i < n + skip; i++) {
        if (i == skip) t0 = now();
        if (rank == 0) {
            send8(w, ep, s, st);
            recv8(w, r, st);
        } else {
            recv8(w, r, st);
            send8(w, ep, s, st);
        }
    }
    if (rank == 0) printf("8-byte ping-pong over gx.c: %.3f us per message\n", (now() - t0) * 1e6 / (2.0 * n));
    sleep(1); // let the peer finish its last receive before the endpoint goes
    return 0;
}
