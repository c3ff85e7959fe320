#include "gx.h"
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

static void gx_req_init(void *request) {
    memset(request, 0, sizeof(gx_req));
}

int gx_context_create(int wakeup, int rma, uint64_t est_eps, ucp_context_h *out) {
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) return st;
    ucp_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                   UCP_PARAM_FIELD_REQUEST_INIT | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    p.features = UCP_FEATURE_TAG | (wakeup ? UCP_FEATURE_WAKEUP : 0);
    if (rma) p.features |= UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    p.request_size = sizeof(gx_req);
    p.request_init = gx_req_init;
    p.mt_workers_shared = 0;
    if (est_eps > 0) {
        p.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
        p.estimated_num_eps = est_eps;
    }
    st = ucp_init(&p, cfg, out);
    ucp_config_release(cfg);
    return st;
}

uint64_t gx_context_memory_types(ucp_context_h ctx) {
    ucp_context_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ctx, &a) != UCS_OK) return 0;
    return a.memory_types;
}

int gx_worker_create(ucp_context_h ctx, int wakeup, ucp_worker_h *out) {
    ucp_worker_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    p.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    if (wakeup) {
        p.field_mask |= UCP_WORKER_PARAM_FIELD_EVENTS;
        p.events = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV | UCP_WAKEUP_TX | UCP_WAKEUP_RX;
    }
    return ucp_worker_create(ctx, &p, out);
}

int gx_worker_address(ucp_worker_h w, void **addr, size_t *len) {
    ucp_address_t *a;
    ucs_status_t st = ucp_worker_get_address(w, &a, len);
    if (st != UCS_OK) return st;
    *addr = a;
    return UCS_OK;
}

int gx_ep_create(ucp_worker_h w, const void *addr, ucp_ep_h *out) {
    ucp_ep_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.address = (const ucp_address_t *)addr;
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    return ucp_ep_create(w, &p, out);
}

static ucs_status_t gx_wait_ptr(ucp_worker_h w, ucs_status_ptr_t sp) {
    if (sp == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(sp)) return UCS_PTR_STATUS(sp);
    ucs_status_t st;
    do {
        ucp_worker_progress(w);
        st = ucp_request_check_status(sp);
    } while (st == UCS_INPROGRESS);
    ucp_request_free(sp);
    return st;
}

int gx_ep_close(ucp_worker_h w, ucp_ep_h ep, int force) {
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    return gx_wait_ptr(w, ucp_ep_close_nbx(ep, &p));
}

int gx_worker_flush(ucp_worker_h w) {
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    return gx_wait_ptr(w, ucp_worker_flush_nbx(w, &p));
}

static void gx_send_cb(void *request, ucs_status_t status, void *user) {
    gx_req *r = (gx_req *)request;
    (void)user;
    r->status = status;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void gx_recv_cb(void *request, ucs_status_t status,
                       const ucp_tag_recv_info_t *info, void *user) {
    gx_req *r = (gx_req *)request;
    (void)user;
    r->status = status;
    /* A probed receive already holds the real tag and length; a truncated
     * completion may report only what fitted, so keep what we know. */
    if (info != NULL && (status == UCS_OK || r->length == 0)) {
        r->tag = info->sender_tag;
        r->length = info->length;
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void gx_fill(ucs_status_ptr_t sp, gx_result *res) {
    if (sp == NULL) {
        res->req = NULL;
        res->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(sp)) {
        res->req = NULL;
        res->status = UCS_PTR_STATUS(sp);
    } else {
        res->req = (gx_req *)sp;
        res->status = UCS_INPROGRESS;
    }
}

static void gx_set_memtype(ucp_request_param_t *p, int memtype) {
    if (memtype >= 0) {
        p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p->memory_type = (ucs_memory_type_t)memtype;
    }
}

void gx_state_close(gx_wstate *st) {
    gx_drain(st);
    free(st->copybuf);
    st->copybuf = NULL;
}

void gx_drain(gx_wstate *st) {
    for (int32_t i = 0; i < st->ndead; i++) {
        gx_req_release(st->dead[i]);
        st->dead[i] = NULL;
    }
    st->ndead = 0;
}

/* gx_args drains st's parked requests (the prologue of every fast entry
 * point) and returns the call's arguments. */
static inline const gx_fcargs *gx_args(gx_wstate *st) {
    if (st->ndead > 0) gx_drain(st);
    return &st->fc;
}

/* gx_send_param prepares the parameters of a send completed by cb. */
static void gx_send_param(ucp_request_param_t *p, ucp_send_nbx_callback_t cb,
                          int memtype) {
    p->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    p->cb.send = cb;
    gx_set_memtype(p, memtype);
}

uintptr_t gx_fc_send(gx_wstate *st) {
    const gx_fcargs *a = gx_args(st);
    ucp_request_param_t p;
    gx_send_param(&p, gx_send_cb, a->memtype);
    ucs_status_ptr_t sp;
    if (a->mode == GX_SEND_SYNC) {
        sp = ucp_tag_send_sync_nbx((ucp_ep_h)a->h, (const void *)a->buf, a->len, a->tag, &p);
    } else {
        sp = ucp_tag_send_nbx((ucp_ep_h)a->h, (const void *)a->buf, a->len, a->tag, &p);
    }
    gx_fill(sp, &st->res);
    return 0;
}

static uint64_t gx_copy_inflight;

uint64_t gx_copied_inflight(void) {
    return __atomic_load_n(&gx_copy_inflight, __ATOMIC_RELAXED);
}

/* gx_send_copy_cb completes a gx_fc_send_copy send that UCP finished
 * later: as gx_send_cb, and its copy is freed. */
static void gx_send_copy_cb(void *request, ucs_status_t status, void *user) {
    gx_req *r = (gx_req *)request;
    free(r->owned);
    r->owned = NULL;
    gx_send_cb(request, status, user);
}

uintptr_t gx_fc_send_copy(gx_wstate *st) {
    const gx_fcargs *a = gx_args(st);
    gx_result *res = &st->res;
    res->req = NULL;
    if (a->len > GX_COPY_MAX) {
        res->status = UCS_ERR_INVALID_PARAM;
        return 0;
    }
    if (st->copybuf == NULL && (st->copybuf = malloc(GX_COPY_MAX)) == NULL) {
        res->status = UCS_ERR_NO_MEMORY;
        return 0;
    }
    if (a->len > 0) memcpy(st->copybuf, (const void *)a->buf, a->len);
    ucp_request_param_t p;
    gx_send_param(&p, gx_send_copy_cb, UCS_MEMORY_TYPE_HOST);
    ucs_status_ptr_t sp = ucp_tag_send_nbx((ucp_ep_h)a->h, st->copybuf, a->len, a->tag, &p);
    if (sp != NULL && !UCS_PTR_IS_ERR(sp)) {
        /* In flight: the copy is the request's now (no callback can run
         * before this returns: callbacks run in progress). */
        ((gx_req *)sp)->owned = st->copybuf;
        st->copybuf = NULL;
        __atomic_fetch_add(&gx_copy_inflight, 1, __ATOMIC_RELAXED);
    }
    gx_fill(sp, res);
    return 0;
}

/* gx_recv_param prepares the parameters every receive shares: completion
 * by gx_recv_cb, and the tag information of an immediate completion written
 * to *info (zeroed first). */
static void gx_recv_param(ucp_request_param_t *p, ucp_tag_recv_info_t *info,
                          int memtype) {
    memset(info, 0, sizeof(*info));
    p->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_RECV_INFO;
    p->cb.recv = gx_recv_cb;
    p->recv_info.tag_info = info;
    gx_set_memtype(p, memtype);
}

/* gx_fill_recv completes a gx_result for a receive: an immediate
 * completion takes its tag and length from info. */
static void gx_fill_recv(ucs_status_ptr_t sp, const ucp_tag_recv_info_t *info,
                         gx_result *res) {
    gx_fill(sp, res);
    if (res->req == NULL) {
        res->tag = info->sender_tag;
        res->length = info->length;
    }
}

/* gx_recv_post posts a receive (gx_fc_recv's body, with typed arguments). */
static void gx_recv_post(ucp_worker_h w, void *buf, size_t len, uint64_t tag,
                         uint64_t mask, int memtype, gx_result *res) {
    /* Match an already-arrived message first: its length is then known even
     * when the receive truncates (UCP reports no length for a receive that
     * fails immediately), and MPI's status must carry the real size. No
     * progress happens between the probe and the post (the caller holds the
     * worker), so nothing can arrive in between. */
    ucp_tag_recv_info_t info;
    ucp_tag_message_h m = ucp_tag_probe_nb(w, tag, mask, 1, &info);
    if (m != NULL) {
        gx_tag_msg_recv(w, buf, len, m, memtype, res);
        res->tag = info.sender_tag;
        res->length = info.length;
        if (res->req != NULL) {
            res->req->tag = info.sender_tag;
            res->req->length = info.length;
        }
        return;
    }
    ucp_request_param_t p;
    gx_recv_param(&p, &info, memtype);
    gx_fill_recv(ucp_tag_recv_nbx(w, buf, len, tag, mask, &p), &info, res);
}

uintptr_t gx_fc_recv(gx_wstate *st) {
    const gx_fcargs *a = gx_args(st);
    gx_recv_post((ucp_worker_h)a->h, (void *)a->buf, a->len, a->tag, a->mask, a->memtype,
                 &st->res);
    return 0;
}

void gx_tag_msg_recv(ucp_worker_h w, void *buf, size_t len, void *msg,
                     int memtype, gx_result *res) {
    ucp_tag_recv_info_t info;
    ucp_request_param_t p;
    gx_recv_param(&p, &info, memtype);
    gx_fill_recv(ucp_tag_msg_recv_nbx(w, buf, len, (ucp_tag_message_h)msg, &p), &info, res);
}

void gx_tag_probe(ucp_worker_h w, uint64_t tag, uint64_t mask, int remove,
                  gx_probe *out) {
    ucp_tag_recv_info_t info;
    ucp_tag_message_h m = ucp_tag_probe_nb(w, tag, mask, remove, &info);
    if (m == NULL) {
        out->found = 0;
        out->msg = NULL;
        return;
    }
    out->found = 1;
    out->tag = info.sender_tag;
    out->length = info.length;
    out->msg = remove ? (void *)m : NULL;
}

unsigned gx_progress_until(uintptr_t wp, volatile int32_t *flag, int spins,
                           uintptr_t stp) {
    ucp_worker_h w = (ucp_worker_h)wp;
    if (stp != 0 && ((gx_wstate *)stp)->ndead > 0) gx_drain((gx_wstate *)stp);
    unsigned n = 0;
    for (int i = 0; i < spins; i++) {
        if (flag != NULL && __atomic_load_n(flag, __ATOMIC_ACQUIRE)) break;
        n += ucp_worker_progress(w);
    }
    return n;
}

unsigned gx_progress_any(ucp_worker_h w, gx_req **reqs, int n, int spins) {
    unsigned ev = 0;
    for (int i = 0; i < spins; i++) {
        for (int j = 0; j < n; j++) {
            if (reqs[j] == NULL || __atomic_load_n(&reqs[j]->done, __ATOMIC_ACQUIRE))
                return ev;
        }
        ev += ucp_worker_progress(w);
    }
    return ev;
}

void gx_req_release(gx_req *r) {
    r->done = 0;
    r->status = 0;
    r->tag = 0;
    r->length = 0;
    r->owned = NULL;
    ucp_request_free(r);
}

void gx_req_cancel(ucp_worker_h w, gx_req *r) {
    ucp_request_cancel(w, r);
}

int gx_worker_efd(ucp_worker_h w, int *fd) {
    return ucp_worker_get_efd(w, fd);
}

int gx_wait_fd(ucp_worker_h w, int efd, int timeout_ms) {
    ucs_status_t st = ucp_worker_arm(w);
    if (st == UCS_ERR_BUSY) return 0;
    if (st != UCS_OK) return -1;
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    int rc;
    do {
        rc = poll(&pfd, 1, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -1 : 1;
}

int gx_worker_arm(ucp_worker_h w) {
    ucs_status_t st = ucp_worker_arm(w);
    if (st == UCS_ERR_BUSY) return 0;
    return st == UCS_OK ? 1 : -1;
}

int gx_poll_fd(int efd, int timeout_ms) {
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    int rc;
    do {
        rc = poll(&pfd, 1, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc;
}

/* gx_complete moves a done request's result into res and gives the request
 * back to UCP. */
static void gx_complete(gx_req *r, gx_result *res) {
    res->status = r->status;
    res->tag = r->tag;
    res->length = r->length;
    res->req = NULL;
    gx_req_release(r);
}

/* gx_recv_spin posts the receive a describes into res and progresses the
 * worker up to a->spins rounds while it is pending; it returns the request
 * (NULL when the receive completed, or failed, at once: res says which). */
static gx_req *gx_recv_spin(const gx_fcargs *a, gx_result *res) {
    ucp_worker_h wh = (ucp_worker_h)a->h;
    gx_recv_post(wh, (void *)a->buf, a->len, a->tag, a->mask, a->memtype, res);
    gx_req *r = res->req;
    if (r == NULL) return NULL;
    for (int i = 0; i < a->spins && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); i++)
        ucp_worker_progress(wh);
    return r;
}

uintptr_t gx_fc_recv_wait(gx_wstate *st) {
    gx_result *res = &st->res;
    gx_req *r = gx_recv_spin(gx_args(st), res);
    if (r != NULL && __atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) gx_complete(r, res);
    return 0;
}

/* gx_recv_now_end finishes an immediate receive once r is done. */
static int gx_recv_now_end(gx_req *r, gx_result *res) {
    if (r->status == UCS_ERR_CANCELED) {
        res->req = NULL;
        gx_req_release(r);
        return 0;
    }
    gx_complete(r, res);
    return 1;
}

uintptr_t gx_fc_recv_now(gx_wstate *st) {
    const gx_fcargs *a = gx_args(st);
    gx_result *res = &st->res;
    gx_req *r = gx_recv_spin(a, res);
    if (r == NULL) return 1; /* done at once (or failed: res->status) */
    if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
        /* An expected receive not yet matched completes inside the cancel,
         * as cancelled; a matched one does not, and is progressed until
         * its data are in: here for a bounded number of rounds, then by
         * gx_recv_now_finish. */
        ucp_worker_h wh = (ucp_worker_h)a->h;
        ucp_request_cancel(wh, r);
        for (int i = 0; i < a->spins && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); i++)
            ucp_worker_progress(wh);
        if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) return GX_RECV_MATCHED;
    }
    return gx_recv_now_end(r, res);
}

static uint64_t gx_matched_count;

uint64_t gx_recv_now_matched(void) {
    return __atomic_load_n(&gx_matched_count, __ATOMIC_RELAXED);
}

int gx_recv_now_finish(uintptr_t w, uintptr_t stp) {
    __atomic_fetch_add(&gx_matched_count, 1, __ATOMIC_RELAXED);
    gx_result *res = &((gx_wstate *)stp)->res;
    gx_req *r = res->req;
    while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
        ucp_worker_progress((ucp_worker_h)w);
    return gx_recv_now_end(r, res);
}

uintptr_t gx_fc_progress(gx_wstate *st) {
    const gx_fcargs *a = &st->fc;
    return gx_progress_until(a->h, (volatile int32_t *)a->flag, a->spins, (uintptr_t)st);
}

uintptr_t gx_fc_call(uintptr_t fn, uintptr_t st) {
    return ((uintptr_t (*)(gx_wstate *))fn)((gx_wstate *)st);
}

uintptr_t gx_stack_new(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return 0;
    if (mprotect(p, page, PROT_NONE) != 0) {
        munmap(p, size + page);
        return 0;
    }
    return ((uintptr_t)p + page + size) & ~(uintptr_t)15;
}

void gx_stack_free(uintptr_t top, size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap((void *)(top - size - page), size + page);
}
