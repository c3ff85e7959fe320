#include "gx_rma.h"
#include <stdlib.h>
#include <string.h>

int gx_mem_map(ucp_context_h ctx, void *addr, size_t len, int memtype, int allocate,
               ucp_mem_h *out, void **base, size_t *outlen) {
    ucp_mem_map_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    p.length = len;
    if (allocate) {
        p.flags = UCP_MEM_MAP_ALLOCATE;
    } else {
        p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
        p.address = addr;
    }
    if (memtype >= 0) {
        p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
        p.memory_type = (ucs_memory_type_t)memtype;
    }
    ucs_status_t st = ucp_mem_map(ctx, &p, out);
    if (st != UCS_OK) return st;
    ucp_mem_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    st = ucp_mem_query(*out, &a);
    if (st != UCS_OK) {
        ucp_mem_unmap(ctx, *out);
        return st;
    }
    *base = a.address;
    *outlen = a.length;
    return UCS_OK;
}

int gx_rkey_pack(ucp_context_h ctx, ucp_mem_h m, void **buf, size_t *len) {
    void *rb;
    ucs_status_t st = ucp_rkey_pack(ctx, m, &rb, len);
    if (st != UCS_OK) return st;
    *buf = malloc(*len);
    if (*buf == NULL) {
        ucp_rkey_buffer_release(rb);
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(*buf, rb, *len);
    ucp_rkey_buffer_release(rb);
    return UCS_OK;
}

static void gx_rma_cb(void *request, ucs_status_t status, void *user) {
    gx_req *r = (gx_req *)request;
    (void)user;
    r->status = status;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* gx_rma_param prepares an RMA operation's parameters (completion by cb). */
static void gx_rma_param(ucp_request_param_t *p, ucp_send_nbx_callback_t cb, int memtype) {
    memset(p, 0, sizeof(*p));
    p->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    p->cb.send = cb;
    if (memtype >= 0) {
        p->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p->memory_type = (ucs_memory_type_t)memtype;
    }
}

/* gx_rma_fill is gx.c's gx_fill (a NULL status pointer is done, an error
 * pointer failed, anything else a request in flight). */
static void gx_rma_fill(ucs_status_ptr_t sp, gx_result *res) {
    res->tag = 0;
    res->length = 0;
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

/* gx_rma_args drains st's parked requests and returns the arguments. */
static inline const gx_fcargs *gx_rma_args(gx_wstate *st) {
    if (st->ndead > 0) gx_drain(st);
    return &st->fc;
}

uintptr_t gx_fc_put(gx_wstate *st) {
    const gx_fcargs *a = gx_rma_args(st);
    ucp_request_param_t p;
    gx_rma_param(&p, gx_rma_cb, a->memtype);
    gx_rma_fill(ucp_put_nbx((ucp_ep_h)a->h, (const void *)a->buf, a->len, a->raddr,
                            (ucp_rkey_h)a->rkey, &p), &st->res);
    return 0;
}

uintptr_t gx_fc_get(gx_wstate *st) {
    const gx_fcargs *a = gx_rma_args(st);
    ucp_request_param_t p;
    gx_rma_param(&p, gx_rma_cb, a->memtype);
    gx_rma_fill(ucp_get_nbx((ucp_ep_h)a->h, (void *)a->buf, a->len, a->raddr,
                            (ucp_rkey_h)a->rkey, &p), &st->res);
    return 0;
}

/* gx_amo holds an atomic's operand and reply buffer: UCP reads and writes
 * them until the operation completes, so they belong to its request. */
typedef struct gx_amo {
    union { uint32_t u32; uint64_t u64; } operand, reply;
} gx_amo;

static uint64_t gx_amo_value(const gx_amo *m, size_t size) {
    return size == 4 ? (uint64_t)m->reply.u32 : m->reply.u64;
}

/* gx_amo_cb completes an atomic UCP finished after the call: the fetched
 * value goes to the request's tag field, and the operands are freed. */
static void gx_amo_cb(void *request, ucs_status_t status, void *user) {
    gx_req *r = (gx_req *)request;
    gx_amo *m = (gx_amo *)r->owned;
    if (m != NULL) {
        r->tag = gx_amo_value(m, (size_t)r->length);
        free(m);
        r->owned = NULL;
    }
    gx_rma_cb(request, status, user);
}

static const ucp_atomic_op_t gx_amo_ops[] = {
    UCP_ATOMIC_OP_ADD, UCP_ATOMIC_OP_SWAP, UCP_ATOMIC_OP_CSWAP,
    UCP_ATOMIC_OP_AND, UCP_ATOMIC_OP_OR, UCP_ATOMIC_OP_XOR,
};

uintptr_t gx_fc_atomic(gx_wstate *st) {
    const gx_fcargs *a = gx_rma_args(st);
    gx_result *res = &st->res;
    if ((a->len != 4 && a->len != 8) || a->mode < 0 || a->mode > GX_AMO_XOR) {
        res->req = NULL;
        res->status = UCS_ERR_INVALID_PARAM;
        return 0;
    }
    gx_amo *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        res->req = NULL;
        res->status = UCS_ERR_NO_MEMORY;
        return 0;
    }
    if (a->len == 4) {
        m->operand.u32 = (uint32_t)a->value;
        m->reply.u32 = (uint32_t)a->swap;
    } else {
        m->operand.u64 = a->value;
        m->reply.u64 = a->swap;
    }
    ucp_request_param_t p;
    gx_rma_param(&p, gx_amo_cb, UCS_MEMORY_TYPE_HOST);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(a->len);
    if (a->spins || a->mode == GX_AMO_SWAP || a->mode == GX_AMO_CSWAP) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer = &m->reply;
    }
    ucs_status_ptr_t sp = ucp_atomic_op_nbx((ucp_ep_h)a->h, gx_amo_ops[a->mode], &m->operand, 1,
                                            a->raddr, (ucp_rkey_h)a->rkey, &p);
    gx_rma_fill(sp, res);
    if (res->req != NULL) {
        /* In flight: the operands are the request's (callbacks run in
         * progress, never inside the posting call). */
        res->req->owned = m;
        res->req->length = a->len;
        return 0;
    }
    res->tag = gx_amo_value(m, a->len);
    free(m);
    return 0;
}

uintptr_t gx_fc_ep_flush(gx_wstate *st) {
    const gx_fcargs *a = gx_rma_args(st);
    ucp_request_param_t p;
    gx_rma_param(&p, gx_rma_cb, -1);
    gx_rma_fill(ucp_ep_flush_nbx((ucp_ep_h)a->h, &p), &st->res);
    return 0;
}

uintptr_t gx_fc_worker_flush(gx_wstate *st) {
    const gx_fcargs *a = gx_rma_args(st);
    ucp_request_param_t p;
    gx_rma_param(&p, gx_rma_cb, -1);
    gx_rma_fill(ucp_worker_flush_nbx((ucp_worker_h)a->h, &p), &st->res);
    return 0;
}
