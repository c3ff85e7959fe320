/* gx.h: the C half of package ucxbind. Small wrappers around UCP that keep
 * every per-operation detail (callbacks, request memory, parameter structs) on
 * the C side, so Go makes one cgo call per operation and reads completion from
 * request memory instead of being called back. */
#ifndef GOMPIX_UCXBIND_GX_H
#define GOMPIX_UCXBIND_GX_H

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

/* gx_req is the user area UCP reserves in front of (at) every request it
 * returns (ucp_params.request_size). Callbacks fill it; Go reads it. */
typedef struct gx_req {
    volatile int32_t done;   /* 1 once the callback ran */
    int32_t          status; /* ucs_status_t of the completion */
    uint64_t         tag;    /* sender tag (receives) */
    uint64_t         length; /* received length (receives) */
    void            *owned;  /* C memory the request sends from, freed with it
                                (gx_fc_send_copy) */
} gx_req;

/* gx_result is what an operation hands back to Go: either an in-flight
 * request (req != NULL) or an immediate completion described by the other
 * fields. */
typedef struct gx_result {
    gx_req  *req;
    int32_t  status;
    uint64_t tag;
    uint64_t length;
} gx_result;

/* gx_wstate is a worker's scratch state in C memory, shared by its calls
 * (a SERIALIZED worker's calls never overlap): the result slot of the
 * posting calls, and the requests Go has released but not yet given back to
 * UCP. Handing those back inside the next hot-path call, instead of one call
 * each, saves a completed operation a crossing from Go into C. */
#define GX_DEAD_MAX 32
/* GX_COPY_MAX is the largest message gx_fc_send_copy takes. */
#define GX_COPY_MAX 4096
/* gx_fcargs carries the arguments of a fast call (fastcall.go): the fast
 * entry points below take only the state pointer, so Go writes their
 * arguments here first. */
typedef struct gx_fcargs {
    uintptr_t h;   /* worker, or endpoint for sends */
    uintptr_t buf;
    size_t    len;
    uint64_t  tag;
    uint64_t  mask;
    uintptr_t flag; /* volatile int32_t * that stops progress, or 0 */
    int32_t   mode;
    int32_t   memtype;
    int32_t   spins;
    /* One-sided calls (gx_rma.c): the remote address and its key, and an
     * atomic's operands (value; swap for a compare-and-swap). */
    uint64_t  raddr;
    uintptr_t rkey;
    uint64_t  value;
    uint64_t  swap;
} gx_fcargs;
typedef struct gx_wstate {
    gx_result res;
    gx_fcargs fc;
    int32_t   ndead;
    gx_req   *dead[GX_DEAD_MAX];
    void     *copybuf; /* gx_fc_send_copy's buffer (GX_COPY_MAX bytes), or NULL */
} gx_wstate;

typedef struct gx_probe {
    int32_t  found;
    uint64_t tag;
    uint64_t length;
    void    *msg; /* message handle when probed with remove */
} gx_probe;

/* rma adds UCP's RMA and 32/64-bit atomic features (gx_rma.c). */
int  gx_context_create(int wakeup, int rma, uint64_t est_eps, ucp_context_h *out);
uint64_t gx_context_memory_types(ucp_context_h ctx);
int  gx_worker_create(ucp_context_h ctx, int wakeup, ucp_worker_h *out);
int  gx_worker_address(ucp_worker_h w, void **addr, size_t *len);
int  gx_ep_create(ucp_worker_h w, const void *addr, ucp_ep_h *out);
int  gx_ep_close(ucp_worker_h w, ucp_ep_h ep, int force);
int  gx_worker_flush(ucp_worker_h w);

/* The per-message calls: the fast entry points, in the one-pointer form
 * fastcall.go's trampoline calls (on a C stack, without the cgo runtime's
 * transitions; gx_fc_call makes the same call through cgo). Each takes its
 * arguments from st->fc (handles, buffers and the flag as integers: buffers
 * hold plain bytes and are kept alive, and pinned where UCP keeps them, by
 * their owners, as ucxbind's Go side documents) and leaves its result in
 * st->res. Each is bounded: it runs at most st->fc.spins rounds of progress
 * and never waits for anything else, because while it runs its goroutine
 * cannot be descheduled. */

/* Send modes for gx_fc_send (fc.mode). */
enum { GX_SEND_STD = 0, GX_SEND_SYNC = 1 };

/* gx_fc_send posts a tagged send of fc.len bytes at fc.buf to endpoint
 * fc.h. */
uintptr_t gx_fc_send(gx_wstate *st);
/* gx_fc_send_copy copies fc.len (<= GX_COPY_MAX) bytes at fc.buf into C
 * memory and sends them from there, so the caller's buffer is free when it
 * returns, whatever UCP does: the send completes inside the call (res.req
 * NULL), or UCP finishes it later from the copy, which then belongs to the
 * request in res.req (freed by its callback). Why: a send UCP cannot
 * complete inside the call must not be left pointing into Go memory that
 * is not pinned, and pinning costs more than copying a short message. */
uintptr_t gx_fc_send_copy(gx_wstate *st);
/* gx_copied_inflight counts the copied sends, process-wide, that UCP
 * finished after the call (for tests). */
uint64_t gx_copied_inflight(void);
/* gx_fc_recv posts a tagged receive (fc.tag under fc.mask) into fc.buf. */
uintptr_t gx_fc_recv(gx_wstate *st);
/* gx_fc_recv_wait posts a receive and progresses the worker up to fc.spins
 * times in the same call; a receive that completes meanwhile is returned
 * completed (req NULL) with its request already released. */
uintptr_t gx_fc_recv_wait(gx_wstate *st);
/* gx_fc_recv_now receives into fc.buf only if a matching message is there
 * or arrives within fc.spins rounds of progress, and returns 1 if it
 * received one (the result in st->res, request released) and 0 if not. It
 * leaves nothing posted: a receive still unmatched at the end is cancelled.
 * One UCP has already matched (it is being written into the buffer) is
 * progressed for up to fc.spins more rounds; if it is still not done, it
 * returns GX_RECV_MATCHED with the request in st->res.req, and
 * gx_recv_now_finish (a cgo call: its wait is not bounded) completes it.
 * UCP then keeps no reference to the buffer, which is what lets a blocking
 * receive skip pinning Go memory. */
enum { GX_RECV_MATCHED = 2 };
uintptr_t gx_fc_recv_now(gx_wstate *st);
int gx_recv_now_finish(uintptr_t w, uintptr_t st);
/* gx_recv_now_matched counts gx_recv_now_finish calls, process-wide (for
 * tests). */
uint64_t gx_recv_now_matched(void);
/* gx_fc_progress is gx_progress_until(fc.h, fc.flag, fc.spins, st). */
uintptr_t gx_fc_progress(gx_wstate *st);
/* gx_fc_call calls a fast entry point through cgo (the fallback where
 * there is no trampoline). */
uintptr_t gx_fc_call(uintptr_t fn, uintptr_t st);
/* gx_drain gives the requests parked in st->dead back to UCP. */
void gx_drain(gx_wstate *st);
/* gx_state_close drains st and frees what it holds (not st itself). */
void gx_state_close(gx_wstate *st);
void gx_tag_msg_recv(ucp_worker_h w, void *buf, size_t len, void *msg,
                     int memtype, gx_result *res);
void gx_tag_probe(ucp_worker_h w, uint64_t tag, uint64_t mask, int remove,
                  gx_probe *out);

/* gx_progress_until progresses the worker until *flag != 0 or spins calls
 * have been made; returns the number of events handled. flag may be NULL.
 * It first drains st (a gx_wstate, or 0). */
unsigned gx_progress_until(uintptr_t w, volatile int32_t *flag, int spins,
                           uintptr_t st);
/* gx_progress_until_any: the same for a list of requests: stops when any is
 * done. */
unsigned gx_progress_any(ucp_worker_h w, gx_req **reqs, int n, int spins);
void gx_req_release(gx_req *r);
void gx_req_cancel(ucp_worker_h w, gx_req *r);

/* gx_wait_fd arms the worker and, if nothing is pending, sleeps in poll(2)
 * on its event fd for at most timeout_ms. Returns 1 if it slept, 0 if events
 * were pending (arm returned BUSY), <0 on error. */
int gx_wait_fd(ucp_worker_h w, int efd, int timeout_ms);
int gx_worker_efd(ucp_worker_h w, int *fd);
/* gx_worker_arm: 1 armed (nothing pending), 0 events pending, -1 error. */
int gx_worker_arm(ucp_worker_h w);
/* gx_poll_fd: poll(2) on fd; touches no UCX state, so it runs unlocked. */
int gx_poll_fd(int efd, int timeout_ms);

/* gx_stack_new maps a C stack of size bytes below a guard page and returns
 * its top (16-byte aligned), or 0; gx_stack_free unmaps it. */
uintptr_t gx_stack_new(size_t size);
void gx_stack_free(uintptr_t top, size_t size);

#endif
