/* gx_rma.h: the one-sided half of ucxbind's C side (gx_rma.c): memory
 * registration, remote keys, put, get, atomics and flushes. The posting
 * calls are fast entry points (gx.h's conventions: arguments in st->fc,
 * the result in st->res, bounded, no call back into Go). */
#ifndef GOMPIX_UCXBIND_GX_RMA_H
#define GOMPIX_UCXBIND_GX_RMA_H

#include "gx.h"

/* gx_mem_map registers len bytes at addr (or, with allocate set, has UCP
 * allocate them; addr is then ignored) of memory type memtype (<0: let UCP
 * detect it). It returns the handle and the region's base and length. */
int gx_mem_map(ucp_context_h ctx, void *addr, size_t len, int memtype, int allocate,
               ucp_mem_h *out, void **base, size_t *outlen);
/* gx_rkey_pack packs m's remote key into a malloc'ed buffer (*buf, *len)
 * that the caller frees with free(3). */
int gx_rkey_pack(ucp_context_h ctx, ucp_mem_h m, void **buf, size_t *len);

/* Atomic operations for gx_fc_atomic (fc.mode). */
enum { GX_AMO_ADD = 0, GX_AMO_SWAP, GX_AMO_CSWAP, GX_AMO_AND, GX_AMO_OR, GX_AMO_XOR };

/* gx_fc_put writes fc.len bytes at fc.buf to fc.raddr under key fc.rkey
 * through endpoint fc.h (memory type fc.memtype of the local buffer). The
 * request completes when the local buffer may be reused; the write is
 * complete at the target after a flush. */
uintptr_t gx_fc_put(gx_wstate *st);
/* gx_fc_get reads fc.len bytes at fc.raddr into fc.buf; the request
 * completes when the data are in. */
uintptr_t gx_fc_get(gx_wstate *st);
/* gx_fc_atomic applies atomic fc.mode of fc.len (4 or 8) bytes at
 * fc.raddr with operand fc.value (the compare value of a CSWAP, whose new
 * value is fc.swap). With fc.spins set it fetches: the old value is in
 * res.tag once the request is done (or at once, res.req NULL). The
 * operands live in C memory owned by the request. */
uintptr_t gx_fc_atomic(gx_wstate *st);
/* gx_fc_ep_flush starts a flush of endpoint fc.h: its request completes
 * once every operation issued on it is complete at its target. */
uintptr_t gx_fc_ep_flush(gx_wstate *st);
/* gx_fc_worker_flush is gx_fc_ep_flush for every endpoint of worker fc.h. */
uintptr_t gx_fc_worker_flush(gx_wstate *st);

#endif
