// gx.h: the C functions gx.c gives the Go side (package cudadrv only).
#ifndef GX_H
#define GX_H
#include <stdint.h>
#include "gx_cuda.h"

extern struct gx_cuda_table gx_cu;
int gx_cuda_load(char *err, int errlen, int *via);
int gx_cuda_has(int which);
const char *gx_error_name(gx_result r);
int gx_nvrtc_load(const char *path, char *err, int errlen);
int gx_nvrtc_compile(const char *src, const char *name, int arch, char **out, size_t *outlen, int *is_cubin,
                     char **log);

gx_result gx_device_info(int ordinal, gx_device *dev, char *name, int namelen, char *bus, int buslen,
                         size_t *mem, int *major, int *minor);
gx_result gx_mem_alloc(gx_ctx c, gx_devptr *p, size_t n);
gx_result gx_mem_free(gx_ctx c, gx_devptr p);
gx_result gx_mem_alloc_managed(gx_ctx c, gx_devptr *p, size_t n);
gx_result gx_host_alloc(gx_ctx c, void **p, size_t n);
gx_result gx_host_free(gx_ctx c, void *p);
gx_result gx_host_register(gx_ctx c, void *p, size_t n);
gx_result gx_host_unregister(gx_ctx c, void *p);
gx_result gx_host_devptr(gx_ctx c, gx_devptr *d, void *p);
gx_result gx_pointer_info(gx_ctx c, gx_devptr p, unsigned int *type, int *ordinal, unsigned long long *id,
                          unsigned int *managed, gx_devptr *base, size_t *size);
gx_result gx_memcpy_htod(gx_ctx c, gx_devptr d, const void *s, size_t n);
gx_result gx_memcpy_dtoh(gx_ctx c, void *d, gx_devptr s, size_t n);
gx_result gx_memcpy_dtod(gx_ctx c, gx_devptr d, gx_devptr s, size_t n);
gx_result gx_memcpy_htod_async(gx_ctx c, gx_devptr d, const void *s, size_t n, gx_stream st);
gx_result gx_memcpy_dtoh_async(gx_ctx c, void *d, gx_devptr s, size_t n, gx_stream st);
gx_result gx_memcpy_dtod_async(gx_ctx c, gx_devptr d, gx_devptr s, size_t n, gx_stream st);
gx_result gx_memcpy_peer_async(gx_ctx c, gx_devptr d, gx_ctx dc, gx_devptr s, gx_ctx sc, size_t n, gx_stream st);
gx_result gx_memset_d8_async(gx_ctx c, gx_devptr d, unsigned char v, size_t n, gx_stream st);
gx_result gx_stream_create(gx_ctx c, gx_stream *s);
gx_result gx_stream_destroy(gx_ctx c, gx_stream s);
gx_result gx_stream_sync(gx_ctx c, gx_stream s);
gx_result gx_stream_query(gx_ctx c, gx_stream s);
gx_result gx_stream_wait_event(gx_ctx c, gx_stream s, gx_event e);
gx_result gx_event_create(gx_ctx c, gx_event *e, int timing);
gx_result gx_event_destroy(gx_ctx c, gx_event e);
gx_result gx_event_record(gx_ctx c, gx_event e, gx_stream s);
gx_result gx_event_query(gx_ctx c, gx_event e);
gx_result gx_event_sync(gx_ctx c, gx_event e);
gx_result gx_event_elapsed(gx_ctx c, float *ms, gx_event a, gx_event b);
gx_result gx_ipc_get(gx_ctx c, void *h64, gx_devptr p);
gx_result gx_ipc_open(gx_ctx c, gx_devptr *p, const void *h64);
gx_result gx_ipc_close(gx_ctx c, gx_devptr p);
gx_result gx_can_access_peer(int *can, gx_device d, gx_device peer);
gx_result gx_enable_peer(gx_ctx c, gx_ctx peer);
gx_result gx_device_attribute(int *v, int attr, gx_device d);
gx_result gx_module_load(gx_ctx c, gx_module *m, const void *image, char *log, unsigned int loglen);
gx_result gx_module_unload(gx_ctx c, gx_module m);
gx_result gx_module_function(gx_ctx c, gx_function *f, gx_module m, const char *name);
gx_result gx_launch(gx_ctx c, gx_function f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                    unsigned int by, unsigned int bz, unsigned int shmem, gx_stream s, const void *buf,
                    const unsigned int *off, int nargs);
gx_result gx_wait_value32(gx_ctx c, gx_stream s, gx_devptr addr, unsigned int v, unsigned int cond);
gx_result gx_write_value32(gx_ctx c, gx_stream s, gx_devptr addr, unsigned int v);
gx_result gx_stream_capturing(gx_ctx c, gx_stream s, int *status);
gx_result gx_stream_begin_capture(gx_ctx c, gx_stream s, int mode);
gx_result gx_stream_end_capture(gx_ctx c, gx_stream s, uintptr_t *graph);
gx_result gx_graph_instantiate(gx_ctx c, uintptr_t graph, uintptr_t *exec);
gx_result gx_graph_launch(gx_ctx c, uintptr_t exec, gx_stream s);
gx_result gx_graph_exec_destroy(gx_ctx c, uintptr_t exec);
gx_result gx_graph_destroy(gx_ctx c, uintptr_t graph);
gx_result gx_host_write32(gx_ctx c, gx_stream s, uintptr_t addr, unsigned int v);
gx_result gx_init(void);
gx_result gx_driver_version(int *v);
gx_result gx_device_count(int *n);
gx_result gx_ctx_retain(gx_ctx *c, gx_device d);
gx_result gx_ctx_release(gx_device d);
#endif
