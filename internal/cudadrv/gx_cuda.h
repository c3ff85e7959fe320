// gx_cuda.h: gompix's own minimal declarations of the CUDA driver API and
// NVRTC entry points it uses, and the table of function pointers they are
// loaded into. No CUDA header is needed to build; scripts/device-check.sh
// (mode abi) compiles abi_check.c against the real cuda.h and nvrtc.h on the
// GPU machine with GX_ABI_CHECK defined, which maps these types onto CUDA's
// and checks every constant and every function-pointer type below.
#ifndef GX_CUDA_H
#define GX_CUDA_H

#include <stddef.h>

#ifdef GX_ABI_CHECK
#include <cuda.h>
#include <nvrtc.h>
typedef CUresult gx_result;
typedef CUdevice gx_device;
typedef CUdeviceptr gx_devptr;
typedef CUcontext gx_ctx;
typedef CUstream gx_stream;
typedef CUevent gx_event;
typedef CUmodule gx_module;
typedef CUfunction gx_function;
typedef CUdevice_attribute gx_devattr;
typedef CUpointer_attribute gx_ptrattr;
typedef CUjit_option gx_jitopt;
typedef CUipcMemHandle gx_ipc_handle;
typedef CUhostFn gx_hostfn;
typedef CUstreamCaptureStatus gx_capstatus;
typedef CUstreamCaptureMode gx_capmode;
typedef CUgraph gx_graph;
typedef CUgraphExec gx_graphexec;
typedef CUdriverProcAddressQueryResult gx_procstatus;
typedef nvrtcResult gx_nvrtc_result;
typedef nvrtcProgram gx_nvrtc_prog;
#else
typedef int gx_result;
typedef int gx_device;
typedef unsigned long long gx_devptr;
typedef struct gx_ctx_st *gx_ctx;
typedef struct gx_stream_st *gx_stream;
typedef struct gx_event_st *gx_event;
typedef struct gx_module_st *gx_module;
typedef struct gx_function_st *gx_function;
typedef int gx_devattr;
typedef int gx_ptrattr;
typedef int gx_jitopt;
typedef struct { char reserved[64]; } gx_ipc_handle;
typedef void (*gx_hostfn)(void *user);
typedef int gx_capstatus;
typedef int gx_capmode;
typedef struct gx_graph_st *gx_graph;
typedef struct gx_graphexec_st *gx_graphexec;
typedef int gx_procstatus;
typedef int gx_nvrtc_result;
typedef struct gx_nvrtc_prog_st *gx_nvrtc_prog;
#endif

// CUresult values gompix names.
#define GX_CUDA_SUCCESS 0
#define GX_CUDA_ERROR_INVALID_VALUE 1
#define GX_CUDA_ERROR_OUT_OF_MEMORY 2
#define GX_CUDA_ERROR_NOT_INITIALIZED 3
#define GX_CUDA_ERROR_DEINITIALIZED 4
#define GX_CUDA_ERROR_NO_DEVICE 100
#define GX_CUDA_ERROR_INVALID_DEVICE 101
#define GX_CUDA_ERROR_INVALID_IMAGE 200
#define GX_CUDA_ERROR_INVALID_CONTEXT 201
#define GX_CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define GX_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED 217
#define GX_CUDA_ERROR_INVALID_PTX 218
#define GX_CUDA_ERROR_JIT_COMPILER_NOT_FOUND 221
#define GX_CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define GX_CUDA_ERROR_INVALID_HANDLE 400
#define GX_CUDA_ERROR_NOT_FOUND 500
#define GX_CUDA_ERROR_NOT_READY 600
#define GX_CUDA_ERROR_ILLEGAL_ADDRESS 700
#define GX_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
#define GX_CUDA_ERROR_PEER_ACCESS_NOT_ENABLED 705
#define GX_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define GX_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define GX_CUDA_ERROR_NOT_SUPPORTED 801
#define GX_CUDA_ERROR_UNKNOWN 999
// Not a CUDA code: an optional entry point the driver does not have.
#define GX_ERR_MISSING_ENTRY (-1)

#define GX_GET_PROC_ADDRESS_DEFAULT 0
#define GX_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define GX_GET_PROC_ADDRESS_SUCCESS 0
#define GX_MEMHOSTALLOC_PORTABLE 1
#define GX_MEMHOSTALLOC_DEVICEMAP 2
#define GX_MEMHOSTREGISTER_PORTABLE 1
#define GX_MEMHOSTREGISTER_DEVICEMAP 2
#define GX_MEM_ATTACH_GLOBAL 1
#define GX_STREAM_NON_BLOCKING 1
#define GX_EVENT_DISABLE_TIMING 2
#define GX_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1
#define GX_STREAM_WAIT_VALUE_GEQ 0
#define GX_STREAM_WAIT_VALUE_EQ 1
#define GX_STREAM_WAIT_VALUE_AND 2
#define GX_STREAM_WAIT_VALUE_NOR 3
#define GX_STREAM_WRITE_VALUE_DEFAULT 0
#define GX_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define GX_POINTER_ATTRIBUTE_BUFFER_ID 7
#define GX_POINTER_ATTRIBUTE_IS_MANAGED 8
#define GX_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define GX_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define GX_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define GX_MEMORYTYPE_HOST 1
#define GX_MEMORYTYPE_DEVICE 2
#define GX_MEMORYTYPE_ARRAY 3
#define GX_MEMORYTYPE_UNIFIED 4
#define GX_JIT_INFO_LOG_BUFFER 3
#define GX_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define GX_JIT_ERROR_LOG_BUFFER 5
#define GX_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define GX_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define GX_DEVICE_ATTRIBUTE_WARP_SIZE 10
#define GX_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define GX_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY 19
#define GX_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define GX_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define GX_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define GX_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR 39
#define GX_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT 40
#define GX_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING 41
#define GX_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define GX_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define GX_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define GX_DEVICE_ATTRIBUTE_MANAGED_MEMORY 83
#define GX_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 92
#define GX_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1 93
#define GX_NVRTC_SUCCESS 0
#define GX_STREAM_CAPTURE_STATUS_NONE 0
#define GX_STREAM_CAPTURE_STATUS_ACTIVE 1
#define GX_STREAM_CAPTURE_STATUS_INVALIDATED 2
#define GX_STREAM_CAPTURE_MODE_GLOBAL 0
#define GX_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define GX_STREAM_CAPTURE_MODE_RELAXED 2

// GX_CUDA_FUNCS(X): X(required, field, dlsym name, fallback dlsym name, params).
// The field name is the unversioned symbol cuGetProcAddress is asked for
// (at GX_CUDA_ABI_VERSION); the dlsym names serve drivers older than 12.0.
#define GX_CUDA_ABI_VERSION 12000
#define GX_CUDA_FUNCS(X)                                                                               \
    X(1, cuGetErrorName, "cuGetErrorName", 0, (gx_result, const char **))                              \
    X(1, cuGetErrorString, "cuGetErrorString", 0, (gx_result, const char **))                          \
    X(1, cuInit, "cuInit", 0, (unsigned int))                                                          \
    X(1, cuDriverGetVersion, "cuDriverGetVersion", 0, (int *))                                         \
    X(1, cuDeviceGet, "cuDeviceGet", 0, (gx_device *, int))                                            \
    X(1, cuDeviceGetCount, "cuDeviceGetCount", 0, (int *))                                             \
    X(1, cuDeviceGetName, "cuDeviceGetName", 0, (char *, int, gx_device))                              \
    X(1, cuDeviceTotalMem, "cuDeviceTotalMem_v2", 0, (size_t *, gx_device))                            \
    X(1, cuDeviceGetAttribute, "cuDeviceGetAttribute", 0, (int *, gx_devattr, gx_device))              \
    X(1, cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 0, (char *, int, gx_device))                      \
    X(1, cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 0, (int *, gx_device, gx_device))             \
    X(1, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0, (gx_ctx *, gx_device))               \
    X(1, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease",       \
      (gx_device))                                                                                     \
    X(1, cuCtxSetCurrent, "cuCtxSetCurrent", 0, (gx_ctx))                                              \
    X(1, cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 0, (gx_ctx, unsigned int))                    \
    X(1, cuMemAlloc, "cuMemAlloc_v2", 0, (gx_devptr *, size_t))                                        \
    X(1, cuMemFree, "cuMemFree_v2", 0, (gx_devptr))                                                    \
    X(1, cuMemAllocManaged, "cuMemAllocManaged", 0, (gx_devptr *, size_t, unsigned int))               \
    X(1, cuMemHostAlloc, "cuMemHostAlloc", 0, (void **, size_t, unsigned int))                         \
    X(1, cuMemFreeHost, "cuMemFreeHost", 0, (void *))                                                  \
    X(1, cuMemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister", (void *, size_t, unsigned int)) \
    X(1, cuMemHostUnregister, "cuMemHostUnregister", 0, (void *))                                      \
    X(1, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", 0, (gx_devptr *, void *, unsigned int)) \
    X(1, cuMemcpyHtoD, "cuMemcpyHtoD_v2", 0, (gx_devptr, const void *, size_t))                        \
    X(1, cuMemcpyDtoH, "cuMemcpyDtoH_v2", 0, (void *, gx_devptr, size_t))                              \
    X(1, cuMemcpyDtoD, "cuMemcpyDtoD_v2", 0, (gx_devptr, gx_devptr, size_t))                           \
    X(1, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 0, (gx_devptr, const void *, size_t, gx_stream))   \
    X(1, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 0, (void *, gx_devptr, size_t, gx_stream))         \
    X(1, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 0, (gx_devptr, gx_devptr, size_t, gx_stream))      \
    X(1, cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 0, (gx_devptr, gx_ctx, gx_devptr, gx_ctx, size_t, gx_stream)) \
    X(1, cuMemsetD8Async, "cuMemsetD8Async", 0, (gx_devptr, unsigned char, size_t, gx_stream))         \
    X(1, cuStreamCreate, "cuStreamCreate", 0, (gx_stream *, unsigned int))                             \
    X(1, cuStreamDestroy, "cuStreamDestroy_v2", 0, (gx_stream))                                        \
    X(1, cuStreamSynchronize, "cuStreamSynchronize", 0, (gx_stream))                                   \
    X(1, cuStreamQuery, "cuStreamQuery", 0, (gx_stream))                                               \
    X(1, cuStreamWaitEvent, "cuStreamWaitEvent", 0, (gx_stream, gx_event, unsigned int))               \
    X(1, cuEventCreate, "cuEventCreate", 0, (gx_event *, unsigned int))                                \
    X(1, cuEventDestroy, "cuEventDestroy_v2", 0, (gx_event))                                           \
    X(1, cuEventRecord, "cuEventRecord", 0, (gx_event, gx_stream))                                     \
    X(1, cuEventQuery, "cuEventQuery", 0, (gx_event))                                                  \
    X(1, cuEventSynchronize, "cuEventSynchronize", 0, (gx_event))                                      \
    X(1, cuEventElapsedTime, "cuEventElapsedTime", 0, (float *, gx_event, gx_event))                   \
    X(1, cuPointerGetAttributes, "cuPointerGetAttributes", 0, (unsigned int, gx_ptrattr *, void **, gx_devptr)) \
    X(1, cuIpcGetMemHandle, "cuIpcGetMemHandle", 0, (gx_ipc_handle *, gx_devptr))                      \
    X(1, cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle",                            \
      (gx_devptr *, gx_ipc_handle, unsigned int))                                                      \
    X(1, cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 0, (gx_devptr))                                   \
    X(1, cuModuleLoadDataEx, "cuModuleLoadDataEx", 0, (gx_module *, const void *, unsigned int, gx_jitopt *, void **)) \
    X(1, cuModuleUnload, "cuModuleUnload", 0, (gx_module))                                             \
    X(1, cuModuleGetFunction, "cuModuleGetFunction", 0, (gx_function *, gx_module, const char *))      \
    X(1, cuLaunchKernel, "cuLaunchKernel", 0,                                                          \
      (gx_function, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, \
       unsigned int, gx_stream, void **, void **))                                                     \
    X(0, cuStreamWaitValue32, "cuStreamWaitValue32_v2", "cuStreamWaitValue32",                         \
      (gx_stream, gx_devptr, unsigned int, unsigned int))                                              \
    X(0, cuStreamWriteValue32, "cuStreamWriteValue32_v2", "cuStreamWriteValue32",                      \
      (gx_stream, gx_devptr, unsigned int, unsigned int))                                              \
    X(0, cuLaunchHostFunc, "cuLaunchHostFunc", 0, (gx_stream, gx_hostfn, void *))                     \
    X(0, cuStreamIsCapturing, "cuStreamIsCapturing", 0, (gx_stream, gx_capstatus *))                  \
    X(0, cuStreamBeginCapture, "cuStreamBeginCapture_v2", 0, (gx_stream, gx_capmode))                 \
    X(0, cuStreamEndCapture, "cuStreamEndCapture", 0, (gx_stream, gx_graph *))                        \
    X(0, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0,                                \
      (gx_graphexec *, gx_graph, unsigned long long))                                                  \
    X(0, cuGraphLaunch, "cuGraphLaunch", 0, (gx_graphexec, gx_stream))                                 \
    X(0, cuGraphExecDestroy, "cuGraphExecDestroy", 0, (gx_graphexec))                                  \
    X(0, cuGraphDestroy, "cuGraphDestroy", 0, (gx_graph))

#define GX_FIELD(req, name, sym, sym2, params) gx_result(*name) params;
struct gx_cuda_table {
    GX_CUDA_FUNCS(GX_FIELD)
};

// NVRTC, loaded only when the driver rejects the committed PTX.
#define GX_NVRTC_FUNCS(X)                                                                              \
    X(1, nvrtcVersion, "nvrtcVersion", 0, (int *, int *))                                              \
    X(1, nvrtcCreateProgram, "nvrtcCreateProgram", 0,                                                  \
      (gx_nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *))    \
    X(1, nvrtcCompileProgram, "nvrtcCompileProgram", 0, (gx_nvrtc_prog, int, const char *const *))     \
    X(1, nvrtcDestroyProgram, "nvrtcDestroyProgram", 0, (gx_nvrtc_prog *))                             \
    X(1, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", 0, (gx_nvrtc_prog, size_t *))               \
    X(1, nvrtcGetProgramLog, "nvrtcGetProgramLog", 0, (gx_nvrtc_prog, char *))                         \
    X(1, nvrtcGetPTXSize, "nvrtcGetPTXSize", 0, (gx_nvrtc_prog, size_t *))                             \
    X(1, nvrtcGetPTX, "nvrtcGetPTX", 0, (gx_nvrtc_prog, char *))                                       \
    X(0, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", 0, (gx_nvrtc_prog, size_t *))                         \
    X(0, nvrtcGetCUBIN, "nvrtcGetCUBIN", 0, (gx_nvrtc_prog, char *))

#define GX_NVRTC_FIELD(req, name, sym, sym2, params) gx_nvrtc_result(*name) params;
struct gx_nvrtc_table {
    GX_NVRTC_FUNCS(GX_NVRTC_FIELD)
};

#endif
