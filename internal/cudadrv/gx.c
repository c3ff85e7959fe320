//go:build cgo && linux

// gx.c: loads the CUDA driver (and, on demand, NVRTC) with dlopen into the
// tables of gx_cuda.h, and wraps each call that needs a context so that it
// makes the context current in the same C call (goroutines move between OS
// threads between cgo calls). Return values are CUresult codes;
// GX_ERR_MISSING_ENTRY marks an optional entry point the driver lacks.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gx.h"

struct gx_cuda_table gx_cu;
struct gx_nvrtc_table gx_nv;
static void *gx_cu_lib, *gx_nv_lib;

typedef gx_result (*gx_gpa_v2)(const char *, void **, int, unsigned long long, gx_procstatus *);
typedef gx_result (*gx_gpa_v1)(const char *, void **, int, unsigned long long);

struct gx_entry {
    const char *name, *sym, *sym2;
    size_t off;
    int required;
};

#define GX_ENTRY(req, name, sym, sym2, params) {#name, sym, sym2, offsetof(struct gx_cuda_table, name), req},
static const struct gx_entry gx_cu_entries[] = {GX_CUDA_FUNCS(GX_ENTRY)};
#define GX_NV_ENTRY(req, name, sym, sym2, params) {#name, sym, sym2, offsetof(struct gx_nvrtc_table, name), req},
static const struct gx_entry gx_nv_entries[] = {GX_NVRTC_FUNCS(GX_NV_ENTRY)};

// gx_cuda_load: 0 on success; else fills err. via tells how symbols were
// found: 2 cuGetProcAddress_v2, 1 cuGetProcAddress (v1), 0 dlsym.
int gx_cuda_load(char *err, int errlen, int *via) {
    const char *names[] = {"libcuda.so.1", "libcuda.so", NULL};
    for (int i = 0; names[i] && !gx_cu_lib; i++) gx_cu_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!gx_cu_lib) {
        const char *e = dlerror();
        snprintf(err, errlen, "dlopen libcuda.so.1: %s", e ? e : "not found");
        return -1;
    }
    gx_gpa_v2 gpa2 = (gx_gpa_v2)dlsym(gx_cu_lib, "cuGetProcAddress_v2");
    gx_gpa_v1 gpa1 = gpa2 ? NULL : (gx_gpa_v1)dlsym(gx_cu_lib, "cuGetProcAddress");
    *via = gpa2 ? 2 : gpa1 ? 1 : 0;
    size_t n = sizeof(gx_cu_entries) / sizeof(gx_cu_entries[0]);
    for (size_t i = 0; i < n; i++) {
        const struct gx_entry *e = &gx_cu_entries[i];
        void *fn = NULL;
        if (gpa2) {
            gx_procstatus st = 0;
            if (gpa2(e->name, &fn, GX_CUDA_ABI_VERSION, GX_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != 0 ||
                st != GX_GET_PROC_ADDRESS_SUCCESS)
                fn = NULL;
        } else if (gpa1) {
            if (gpa1(e->name, &fn, GX_CUDA_ABI_VERSION, GX_GET_PROC_ADDRESS_LEGACY_STREAM) != 0) fn = NULL;
        }
        if (!fn) fn = dlsym(gx_cu_lib, e->sym);
        if (!fn && e->sym2) fn = dlsym(gx_cu_lib, e->sym2);
        if (!fn && e->required) {
            snprintf(err, errlen, "libcuda.so.1 lacks %s", e->name);
            return -1;
        }
        memcpy((char *)&gx_cu + e->off, &fn, sizeof fn);
    }
    return 0;
}

int gx_cuda_has(int which) {
    switch (which) {
    case 0: return gx_cu.cuStreamWaitValue32 != NULL && gx_cu.cuStreamWriteValue32 != NULL;
    case 1: return gx_cu.cuLaunchHostFunc != NULL;
    }
    return 0;
}

const char *gx_error_name(gx_result r) {
    const char *s = NULL;
    if (!gx_cu.cuGetErrorName || gx_cu.cuGetErrorName(r, &s) != 0) return NULL;
    return s;
}

int gx_nvrtc_load(const char *path, char *err, int errlen) {
    if (gx_nv_lib) return 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return -1;
    }
    struct gx_nvrtc_table t;
    size_t n = sizeof(gx_nv_entries) / sizeof(gx_nv_entries[0]);
    for (size_t i = 0; i < n; i++) {
        const struct gx_entry *e = &gx_nv_entries[i];
        void *fn = dlsym(h, e->sym);
        if (!fn && e->required) {
            snprintf(err, errlen, "%s lacks %s", path, e->sym);
            dlclose(h);
            return -1;
        }
        memcpy((char *)&t + e->off, &fn, sizeof fn);
    }
    gx_nv = t;
    gx_nv_lib = h;
    return 0;
}

// ---- wrappers: each makes ctx current first ---------------------------------

#define GX_CTX(c)                                  \
    do {                                           \
        gx_result r_ = gx_cu.cuCtxSetCurrent(c);   \
        if (r_ != GX_CUDA_SUCCESS) return r_;      \
    } while (0)

gx_result gx_device_info(int ordinal, gx_device *dev, char *name, int namelen, char *bus, int buslen,
                         size_t *mem, int *major, int *minor) {
    gx_result r;
    if ((r = gx_cu.cuDeviceGet(dev, ordinal))) return r;
    if ((r = gx_cu.cuDeviceGetName(name, namelen, *dev))) return r;
    if ((r = gx_cu.cuDeviceGetPCIBusId(bus, buslen, *dev))) return r;
    if ((r = gx_cu.cuDeviceTotalMem(mem, *dev))) return r;
    if ((r = gx_cu.cuDeviceGetAttribute(major, GX_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *dev))) return r;
    return gx_cu.cuDeviceGetAttribute(minor, GX_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *dev);
}

gx_result gx_mem_alloc(gx_ctx c, gx_devptr *p, size_t n) { GX_CTX(c); return gx_cu.cuMemAlloc(p, n); }
gx_result gx_mem_free(gx_ctx c, gx_devptr p) { GX_CTX(c); return gx_cu.cuMemFree(p); }
gx_result gx_mem_alloc_managed(gx_ctx c, gx_devptr *p, size_t n) {
    GX_CTX(c);
    return gx_cu.cuMemAllocManaged(p, n, GX_MEM_ATTACH_GLOBAL);
}
gx_result gx_host_alloc(gx_ctx c, void **p, size_t n) {
    GX_CTX(c);
    return gx_cu.cuMemHostAlloc(p, n, GX_MEMHOSTALLOC_PORTABLE | GX_MEMHOSTALLOC_DEVICEMAP);
}
gx_result gx_host_free(gx_ctx c, void *p) { GX_CTX(c); return gx_cu.cuMemFreeHost(p); }
gx_result gx_host_register(gx_ctx c, void *p, size_t n) {
    GX_CTX(c);
    return gx_cu.cuMemHostRegister(p, n, GX_MEMHOSTREGISTER_PORTABLE | GX_MEMHOSTREGISTER_DEVICEMAP);
}
gx_result gx_host_unregister(gx_ctx c, void *p) { GX_CTX(c); return gx_cu.cuMemHostUnregister(p); }
gx_result gx_host_devptr(gx_ctx c, gx_devptr *d, void *p) { GX_CTX(c); return gx_cu.cuMemHostGetDevicePointer(d, p, 0); }

gx_result gx_pointer_info(gx_ctx c, gx_devptr p, unsigned int *type, int *ordinal, unsigned long long *id,
                          unsigned int *managed, gx_devptr *base, size_t *size) {
    GX_CTX(c);
    gx_ptrattr attrs[6] = {GX_POINTER_ATTRIBUTE_MEMORY_TYPE, GX_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                           GX_POINTER_ATTRIBUTE_BUFFER_ID,   GX_POINTER_ATTRIBUTE_IS_MANAGED,
                           GX_POINTER_ATTRIBUTE_RANGE_START_ADDR, GX_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[6] = {type, ordinal, id, managed, base, size};
    return gx_cu.cuPointerGetAttributes(6, attrs, data, p);
}

gx_result gx_memcpy_htod(gx_ctx c, gx_devptr d, const void *s, size_t n) { GX_CTX(c); return gx_cu.cuMemcpyHtoD(d, s, n); }
gx_result gx_memcpy_dtoh(gx_ctx c, void *d, gx_devptr s, size_t n) { GX_CTX(c); return gx_cu.cuMemcpyDtoH(d, s, n); }
gx_result gx_memcpy_dtod(gx_ctx c, gx_devptr d, gx_devptr s, size_t n) { GX_CTX(c); return gx_cu.cuMemcpyDtoD(d, s, n); }
gx_result gx_memcpy_htod_async(gx_ctx c, gx_devptr d, const void *s, size_t n, gx_stream st) {
    GX_CTX(c);
    return gx_cu.cuMemcpyHtoDAsync(d, s, n, st);
}
gx_result gx_memcpy_dtoh_async(gx_ctx c, void *d, gx_devptr s, size_t n, gx_stream st) {
    GX_CTX(c);
    return gx_cu.cuMemcpyDtoHAsync(d, s, n, st);
}
gx_result gx_memcpy_dtod_async(gx_ctx c, gx_devptr d, gx_devptr s, size_t n, gx_stream st) {
    GX_CTX(c);
    return gx_cu.cuMemcpyDtoDAsync(d, s, n, st);
}
gx_result gx_memcpy_peer_async(gx_ctx c, gx_devptr d, gx_ctx dc, gx_devptr s, gx_ctx sc, size_t n, gx_stream st) {
    GX_CTX(c);
    return gx_cu.cuMemcpyPeerAsync(d, dc, s, sc, n, st);
}
gx_result gx_memset_d8_async(gx_ctx c, gx_devptr d, unsigned char v, size_t n, gx_stream st) {
    GX_CTX(c);
    return gx_cu.cuMemsetD8Async(d, v, n, st);
}

gx_result gx_stream_create(gx_ctx c, gx_stream *s) { GX_CTX(c); return gx_cu.cuStreamCreate(s, GX_STREAM_NON_BLOCKING); }
gx_result gx_stream_destroy(gx_ctx c, gx_stream s) { GX_CTX(c); return gx_cu.cuStreamDestroy(s); }
gx_result gx_stream_sync(gx_ctx c, gx_stream s) { GX_CTX(c); return gx_cu.cuStreamSynchronize(s); }
gx_result gx_stream_query(gx_ctx c, gx_stream s) { GX_CTX(c); return gx_cu.cuStreamQuery(s); }
gx_result gx_stream_wait_event(gx_ctx c, gx_stream s, gx_event e) { GX_CTX(c); return gx_cu.cuStreamWaitEvent(s, e, 0); }
gx_result gx_event_create(gx_ctx c, gx_event *e, int timing) {
    GX_CTX(c);
    return gx_cu.cuEventCreate(e, timing ? 0 : GX_EVENT_DISABLE_TIMING);
}
gx_result gx_event_destroy(gx_ctx c, gx_event e) { GX_CTX(c); return gx_cu.cuEventDestroy(e); }
gx_result gx_event_record(gx_ctx c, gx_event e, gx_stream s) { GX_CTX(c); return gx_cu.cuEventRecord(e, s); }
gx_result gx_event_query(gx_ctx c, gx_event e) { GX_CTX(c); return gx_cu.cuEventQuery(e); }
gx_result gx_event_sync(gx_ctx c, gx_event e) { GX_CTX(c); return gx_cu.cuEventSynchronize(e); }
gx_result gx_event_elapsed(gx_ctx c, float *ms, gx_event a, gx_event b) { GX_CTX(c); return gx_cu.cuEventElapsedTime(ms, a, b); }

gx_result gx_ipc_get(gx_ctx c, void *h64, gx_devptr p) {
    GX_CTX(c);
    gx_ipc_handle h;
    gx_result r = gx_cu.cuIpcGetMemHandle(&h, p);
    if (r == GX_CUDA_SUCCESS) memcpy(h64, &h, sizeof h);
    return r;
}
gx_result gx_ipc_open(gx_ctx c, gx_devptr *p, const void *h64) {
    GX_CTX(c);
    gx_ipc_handle h;
    memcpy(&h, h64, sizeof h);
    return gx_cu.cuIpcOpenMemHandle(p, h, GX_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
}
gx_result gx_ipc_close(gx_ctx c, gx_devptr p) { GX_CTX(c); return gx_cu.cuIpcCloseMemHandle(p); }
gx_result gx_can_access_peer(int *can, gx_device d, gx_device peer) { return gx_cu.cuDeviceCanAccessPeer(can, d, peer); }
gx_result gx_enable_peer(gx_ctx c, gx_ctx peer) { GX_CTX(c); return gx_cu.cuCtxEnablePeerAccess(peer, 0); }
gx_result gx_device_attribute(int *v, int attr, gx_device d) { return gx_cu.cuDeviceGetAttribute(v, (gx_devattr)attr, d); }

gx_result gx_module_load(gx_ctx c, gx_module *m, const void *image, char *log, unsigned int loglen) {
    GX_CTX(c);
    gx_jitopt opts[2] = {GX_JIT_ERROR_LOG_BUFFER, GX_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(size_t)loglen};
    return gx_cu.cuModuleLoadDataEx(m, image, 2, opts, vals);
}
gx_result gx_module_unload(gx_ctx c, gx_module m) { GX_CTX(c); return gx_cu.cuModuleUnload(m); }
gx_result gx_module_function(gx_ctx c, gx_function *f, gx_module m, const char *name) {
    GX_CTX(c);
    return gx_cu.cuModuleGetFunction(f, m, name);
}

gx_result gx_launch(gx_ctx c, gx_function f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                    unsigned int by, unsigned int bz, unsigned int shmem, gx_stream s, const void *buf,
                    const unsigned int *off, int nargs) {
    void *params[32];
    if (nargs < 0 || nargs > 32) return GX_CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < nargs; i++) params[i] = (char *)buf + off[i];
    GX_CTX(c);
    return gx_cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s,
                                nargs ? params : NULL, NULL);
}

gx_result gx_wait_value32(gx_ctx c, gx_stream s, gx_devptr addr, unsigned int v, unsigned int cond) {
    if (!gx_cu.cuStreamWaitValue32) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuStreamWaitValue32(s, addr, v, cond);
}
gx_result gx_write_value32(gx_ctx c, gx_stream s, gx_devptr addr, unsigned int v) {
    if (!gx_cu.cuStreamWriteValue32) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuStreamWriteValue32(s, addr, v, GX_STREAM_WRITE_VALUE_DEFAULT);
}

// CUDA graphs: handles cross to Go as integers.
gx_result gx_stream_capturing(gx_ctx c, gx_stream s, int *status) {
    if (!gx_cu.cuStreamIsCapturing) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    gx_capstatus st = GX_STREAM_CAPTURE_STATUS_NONE;
    gx_result r = gx_cu.cuStreamIsCapturing(s, &st);
    *status = (int)st;
    return r;
}
gx_result gx_stream_begin_capture(gx_ctx c, gx_stream s, int mode) {
    if (!gx_cu.cuStreamBeginCapture) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuStreamBeginCapture(s, (gx_capmode)mode);
}
gx_result gx_stream_end_capture(gx_ctx c, gx_stream s, uintptr_t *graph) {
    if (!gx_cu.cuStreamEndCapture) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    gx_graph g = 0;
    gx_result r = gx_cu.cuStreamEndCapture(s, &g);
    *graph = (uintptr_t)g;
    return r;
}
gx_result gx_graph_instantiate(gx_ctx c, uintptr_t graph, uintptr_t *exec) {
    if (!gx_cu.cuGraphInstantiateWithFlags) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    gx_graphexec e = 0;
    gx_result r = gx_cu.cuGraphInstantiateWithFlags(&e, (gx_graph)graph, 0);
    *exec = (uintptr_t)e;
    return r;
}
gx_result gx_graph_launch(gx_ctx c, uintptr_t exec, gx_stream s) {
    if (!gx_cu.cuGraphLaunch) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuGraphLaunch((gx_graphexec)exec, s);
}
gx_result gx_graph_exec_destroy(gx_ctx c, uintptr_t exec) {
    if (!gx_cu.cuGraphExecDestroy) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuGraphExecDestroy((gx_graphexec)exec);
}
gx_result gx_graph_destroy(gx_ctx c, uintptr_t graph) {
    if (!gx_cu.cuGraphDestroy) return GX_ERR_MISSING_ENTRY;
    GX_CTX(c);
    return gx_cu.cuGraphDestroy((gx_graph)graph);
}

struct gx_host_write {
    unsigned int *addr;
    unsigned int value;
};
static void gx_host_write_cb(void *u) {
    struct gx_host_write *w = u;
    __atomic_store_n(w->addr, w->value, __ATOMIC_RELEASE);
    free(w);
}
gx_result gx_host_write32(gx_ctx c, gx_stream s, uintptr_t addr, unsigned int v) {
    if (!gx_cu.cuLaunchHostFunc) return GX_ERR_MISSING_ENTRY;
    struct gx_host_write *w = malloc(sizeof *w);
    if (!w) return GX_CUDA_ERROR_OUT_OF_MEMORY;
    w->addr = (unsigned int *)addr;
    w->value = v;
    gx_result r = GX_CUDA_SUCCESS;
    if ((r = gx_cu.cuCtxSetCurrent(c)) == GX_CUDA_SUCCESS) r = gx_cu.cuLaunchHostFunc(s, gx_host_write_cb, w);
    if (r != GX_CUDA_SUCCESS) free(w);
    return r;
}

// ---- NVRTC ---------------------------------------------------------------------

// gx_nvrtc_compile compiles src for sm_<arch>. On success *out is a malloc'd
// image (cubin when the library can make one, else PTX, *is_cubin says) of
// *outlen bytes; on failure *log is a malloc'd compile log. The caller frees.
int gx_nvrtc_compile(const char *src, const char *name, int arch, char **out, size_t *outlen, int *is_cubin,
                     char **log) {
    gx_nvrtc_prog p;
    *out = NULL;
    *log = NULL;
    int r = gx_nv.nvrtcCreateProgram(&p, src, name, 0, NULL, NULL);
    if (r) return r;
    char archopt[64];
    int cubin = gx_nv.nvrtcGetCUBIN != NULL && gx_nv.nvrtcGetCUBINSize != NULL;
    snprintf(archopt, sizeof archopt, cubin ? "--gpu-architecture=sm_%d" : "--gpu-architecture=compute_%d", arch);
    const char *opts[] = {archopt, "--std=c++17", "--fmad=false"};
    r = gx_nv.nvrtcCompileProgram(p, 3, opts);
    if (r) {
        size_t n = 0;
        if (gx_nv.nvrtcGetProgramLogSize(p, &n) == 0 && n > 0 && (*log = malloc(n + 1))) {
            gx_nv.nvrtcGetProgramLog(p, *log);
            (*log)[n] = 0;
        }
        gx_nv.nvrtcDestroyProgram(&p);
        return r;
    }
    size_t n = 0;
    r = cubin ? gx_nv.nvrtcGetCUBINSize(p, &n) : gx_nv.nvrtcGetPTXSize(p, &n);
    if (!r && (*out = malloc(n ? n : 1)) != NULL) r = cubin ? gx_nv.nvrtcGetCUBIN(p, *out) : gx_nv.nvrtcGetPTX(p, *out);
    *outlen = n;
    *is_cubin = cubin;
    gx_nv.nvrtcDestroyProgram(&p);
    return r;
}

// ---- calls without a context ---------------------------------------------------------
gx_result gx_init(void) { return gx_cu.cuInit(0); }
gx_result gx_driver_version(int *v) { return gx_cu.cuDriverGetVersion(v); }
gx_result gx_device_count(int *n) { return gx_cu.cuDeviceGetCount(n); }
gx_result gx_ctx_retain(gx_ctx *c, gx_device d) { return gx_cu.cuDevicePrimaryCtxRetain(c, d); }
gx_result gx_ctx_release(gx_device d) { return gx_cu.cuDevicePrimaryCtxRelease(d); }
