// reduce.cu: gompix's element-wise reduction kernels and the one-thread flag
// kernels that order streams on host-mapped flags.
//
// Self-contained on purpose: no #include, no CUDA runtime types, so that the
// same text compiles with nvcc (kernels/gen.sh) and with NVRTC at run time
// (the fallback when a driver rejects the committed PTX), where no include
// path is set. fp16/bf16 conversions use the PTX cvt instructions directly.
//
// Kernel names (extern "C", unmangled), matched by kernels.Reduce in Go:
//   gompix_reduce_<op>_<type>_k2   out[i] = in0[i] op in1[i]
//   gompix_reduce_<op>_<type>_kn   out[i] = op over in[0..k) (1 <= k <= 8)
//   gompix_wait_flag(flag, value)   spin until *flag >= value
//   gompix_write_flag(flag, value)  *flag = value, after a system fence
//   gompix_direct_<op>_<type>       one block: copy this rank's data into its
//                                   staging slot, signal every peer, wait for
//                                   every peer, reduce the peers' slots
//                                   (struct DirectArgs, 344 bytes); or,
//                                   with no copy and no flags, any grid:
//                                   a reduction stored to several outputs
//   gompix_direct_gather            the same copy, signal and wait, then
//                                   gather blocks of bytes from the slots
// Every reduce kernel takes one parameter, struct ReduceArgs, whose layout is
// fixed (96 bytes) and mirrored by kernels.ReduceArgs.

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Raw 16-bit storage for the half types: distinct types so templates can tell
// them apart from u16.
struct f16 { u16 bits; };
struct bf16 { u16 bits; };

#define GX_MAX_INPUTS 8
#define GX_BLOCK 512

struct ReduceArgs {
    void *out;                      // offset 0
    const void *in[GX_MAX_INPUTS];  // offset 8
    u64 n;                          // offset 72: elements
    u32 k;                          // offset 80: inputs used by the _kn form
    u32 divisor;                    // offset 84: avg on integer types: sum / divisor
    double scale;                   // offset 88: avg on real types: sum * scale
};

struct alignas(16) vec16 { u32 w[4]; };

// ---- conversions -----------------------------------------------------------

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float b2f(u16 b) {
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(((u32)b) << 16));
    return f;
}
__device__ __forceinline__ u16 f2b(float f) {
    u16 b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
    return b;
}

// Traits: Acc is the type arithmetic happens in; Arith the type sum and prod
// wrap in (unsigned for integers, so overflow is defined); Signed selects the
// division of integer avg.
template <typename T> struct Tr;
#define GX_INT_TRAITS(T, U, S)                                              \
    template <> struct Tr<T> {                                              \
        typedef T Acc;                                                      \
        typedef U Arith;                                                    \
        enum { is_float = 0, is_signed = S };                               \
        static __device__ __forceinline__ Acc load(T v) { return v; }       \
        static __device__ __forceinline__ T store(Acc v) { return v; }      \
    };
// 8- and 16-bit values wrap in u32: u16 * u16 would promote to int and overflow.
GX_INT_TRAITS(i8, u32, 1)
GX_INT_TRAITS(i16, u32, 1)
GX_INT_TRAITS(i32, u32, 1)
GX_INT_TRAITS(i64, u64, 1)
GX_INT_TRAITS(u8, u32, 0)
GX_INT_TRAITS(u16, u32, 0)
GX_INT_TRAITS(u32, u32, 0)
GX_INT_TRAITS(u64, u64, 0)
template <> struct Tr<float> {
    typedef float Acc;
    typedef float Arith;
    enum { is_float = 1, is_signed = 1 };
    static __device__ __forceinline__ Acc load(float v) { return v; }
    static __device__ __forceinline__ float store(Acc v) { return v; }
};
template <> struct Tr<double> {
    typedef double Acc;
    typedef double Arith;
    enum { is_float = 1, is_signed = 1 };
    static __device__ __forceinline__ Acc load(double v) { return v; }
    static __device__ __forceinline__ double store(Acc v) { return v; }
};
template <> struct Tr<f16> {
    typedef float Acc;
    typedef float Arith;
    enum { is_float = 1, is_signed = 1 };
    static __device__ __forceinline__ Acc load(f16 v) { return h2f(v.bits); }
    static __device__ __forceinline__ f16 store(Acc v) { f16 r; r.bits = f2h(v); return r; }
};
template <> struct Tr<bf16> {
    typedef float Acc;
    typedef float Arith;
    enum { is_float = 1, is_signed = 1 };
    static __device__ __forceinline__ Acc load(bf16 v) { return b2f(v.bits); }
    static __device__ __forceinline__ bf16 store(Acc v) { bf16 r; r.bits = f2b(v); return r; }
};

// ---- operations --------------------------------------------------------------
// first() maps the first input (logical ops normalise to 0/1), apply() folds
// one more input in, finish() runs once per element at the end (avg only).

template <typename T> struct OpBase {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A first(A x) { return x; }
    static __device__ __forceinline__ A finish(A x, const ReduceArgs &) { return x; }
};
template <typename T> struct OpSum : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    typedef typename Tr<T>::Arith R;
    static __device__ __forceinline__ A apply(A a, A b) { return (A)((R)a + (R)b); }
};
template <typename T> struct OpProd : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    typedef typename Tr<T>::Arith R;
    static __device__ __forceinline__ A apply(A a, A b) { return (A)((R)a * (R)b); }
};
template <typename T> struct OpMin : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return b < a ? b : a; }
};
template <typename T> struct OpMax : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return b > a ? b : a; }
};
template <typename T> struct OpLogical : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A first(A x) { return x != (A)0 ? (A)1 : (A)0; }
};
template <typename T> struct OpLand : OpLogical<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return (a != (A)0 && b != (A)0) ? (A)1 : (A)0; }
};
template <typename T> struct OpLor : OpLogical<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return (a != (A)0 || b != (A)0) ? (A)1 : (A)0; }
};
template <typename T> struct OpLxor : OpLogical<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return ((a != (A)0) != (b != (A)0)) ? (A)1 : (A)0; }
};
template <typename T> struct OpBand : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return a & b; }
};
template <typename T> struct OpBor : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return a | b; }
};
template <typename T> struct OpBxor : OpBase<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A apply(A a, A b) { return a ^ b; }
};

template <typename A, int F, int S> struct AvgFinish;
template <typename A, int S> struct AvgFinish<A, 1, S> {  // reals: scale
    static __device__ __forceinline__ A f(A x, const ReduceArgs &a) { return x * (A)a.scale; }
};
template <typename A> struct AvgFinish<A, 0, 1> {  // signed integers
    static __device__ __forceinline__ A f(A x, const ReduceArgs &a) {
        long long d = a.divisor ? (long long)a.divisor : 1;
        return (A)((long long)x / d);
    }
};
template <typename A> struct AvgFinish<A, 0, 0> {  // unsigned integers
    static __device__ __forceinline__ A f(A x, const ReduceArgs &a) {
        unsigned long long d = a.divisor ? (unsigned long long)a.divisor : 1ull;
        return (A)((unsigned long long)x / d);
    }
};
template <typename T> struct OpAvg : OpSum<T> {
    typedef typename Tr<T>::Acc A;
    static __device__ __forceinline__ A finish(A x, const ReduceArgs &a) {
        return AvgFinish<A, Tr<T>::is_float, Tr<T>::is_signed>::f(x, a);
    }
};

// ---- the reduction body ---------------------------------------------------------
// K > 0: exactly K inputs, known at compile time. K == 0: a.k inputs at run
// time; the input loop is unrolled to GX_MAX_INPUTS with predicates so all
// loads of one vector are issued before they are combined.

// MULTI: the result is also stored to every non-null outs[j] (the fused
// kernel's push of a reduced chunk into the peers' outputs).
template <template <typename> class OP, typename T, int K, int MULTI>
__device__ __forceinline__ void reduce_body(const ReduceArgs &a, void *const *outs) {
    typedef Tr<T> TR;
    typedef typename TR::Acc A;
    typedef OP<T> O;
    enum { L = sizeof(vec16) / sizeof(T) };
    const int k = K > 0 ? K : (int)a.k;
    const u64 n = a.n;
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    T *out = (T *)a.out;

    bool aligned = ((u64)a.out & 15) == 0;
#pragma unroll
    for (int j = 0; j < GX_MAX_INPUTS; j++)
        if (j < k) aligned = aligned && (((u64)a.in[j] & 15) == 0);
    if (MULTI) {
#pragma unroll
        for (int j = 0; j < GX_MAX_INPUTS; j++) aligned = aligned && (((u64)outs[j] & 15) == 0);
    }

    u64 done = 0;
    if (aligned) {
        const u64 nv = n / L;
        for (u64 v = tid; v < nv; v += stride) {
            union { vec16 v; T e[L]; } x[K > 0 ? K : GX_MAX_INPUTS];
#pragma unroll
            for (int j = 0; j < (K > 0 ? K : GX_MAX_INPUTS); j++)
                if (j < k) x[j].v = ((const vec16 *)a.in[j])[v];
            union { vec16 v; T e[L]; } r;
#pragma unroll
            for (int l = 0; l < L; l++) {
                A acc = O::first(TR::load(x[0].e[l]));
#pragma unroll
                for (int j = 1; j < (K > 0 ? K : GX_MAX_INPUTS); j++)
                    if (j < k) acc = O::apply(acc, TR::load(x[j].e[l]));
                r.e[l] = TR::store(O::finish(acc, a));
            }
            ((vec16 *)a.out)[v] = r.v;
            if (MULTI) {
#pragma unroll
                for (int j = 0; j < GX_MAX_INPUTS; j++)
                    if (outs[j]) ((vec16 *)outs[j])[v] = r.v;
            }
        }
        done = nv * L;
    }
    for (u64 i = done + tid; i < n; i += stride) {
        A acc = O::first(TR::load(((const T *)a.in[0])[i]));
#pragma unroll
        for (int j = 1; j < (K > 0 ? K : GX_MAX_INPUTS); j++)
            if (j < k) acc = O::apply(acc, TR::load(((const T *)a.in[j])[i]));
        const T y = TR::store(O::finish(acc, a));
        out[i] = y;
        if (MULTI) {
#pragma unroll
            for (int j = 0; j < GX_MAX_INPUTS; j++)
                if (outs[j]) ((T *)outs[j])[i] = y;
        }
    }
}

#define GX_DEF(opname, OP, tname, T)                                                        \
    extern "C" __global__ void __launch_bounds__(GX_BLOCK)                                  \
        gompix_reduce_##opname##_##tname##_k2(const ReduceArgs a) { reduce_body<OP, T, 2, 0>(a, 0); } \
    extern "C" __global__ void __launch_bounds__(GX_BLOCK)                                  \
        gompix_reduce_##opname##_##tname##_kn(const ReduceArgs a) { reduce_body<OP, T, 0, 0>(a, 0); } \
    extern "C" __global__ void __launch_bounds__(GX_BLOCK)                                  \
        gompix_direct_##opname##_##tname(const DirectArgs a) { direct_body<OP, T>(a); }

#define GX_INT_TYPES(opname, OP)          \
    GX_DEF(opname, OP, i8, i8)            \
    GX_DEF(opname, OP, i16, i16)          \
    GX_DEF(opname, OP, i32, i32)          \
    GX_DEF(opname, OP, i64, i64)          \
    GX_DEF(opname, OP, u8, u8)            \
    GX_DEF(opname, OP, u16, u16)          \
    GX_DEF(opname, OP, u32, u32)          \
    GX_DEF(opname, OP, u64, u64)

// Every type: the integers, then the reals (the order of the kernels in the
// generated images).
#define GX_ALL_TYPES(opname, OP)          \
    GX_INT_TYPES(opname, OP)              \
    GX_DEF(opname, OP, f16, f16)          \
    GX_DEF(opname, OP, bf16, bf16)        \
    GX_DEF(opname, OP, f32, float)        \
    GX_DEF(opname, OP, f64, double)

// ---- fused IPC-direct collective (small messages) ------------------------------
// One launch does what would otherwise be a copy, flag writes, flag waits and a
// reduction on the stream: the latency of small allreduce, reduce_scatter and
// reduce between GPUs that map each other's memory. Launched with one block:
// the signal must follow every thread's copy, which a block barrier orders.

struct DirectArgs {
    ReduceArgs r;                    // offset 0: out, in[] = every rank's slot (+ offset), n, k, avg
    const void *src;                 // offset 96: this rank's contribution
    void *slot;                      // offset 104: this rank's staging slot
    u64 ncopy;                       // offset 112: bytes to copy src -> slot
    u32 *peer_flag[GX_MAX_INPUTS];   // offset 120: this rank's flag in each peer's region (null: self)
    const volatile u32 *my_flag[GX_MAX_INPUTS];  // offset 184: each peer's flag in this region (null: self)
    u32 seq;                         // offset 248: the call's sequence number
    u32 reduce;                      // offset 252: 0 = copy and signal only
    void *outs[GX_MAX_INPUTS];       // offset 256: more outputs for the result (null: none)
    volatile u32 *done;              // offset 320: seq stored here once the output is written (null: none)
    u32 *counter;                    // offset 328: two block-arrival counters (null: a one-block launch)
    u32 target;                      // offset 336: both counters' value once every block of this launch arrived
    u32 pad;                         // offset 340
};

// grid_copy copies n bytes with every thread of the grid.
__device__ __forceinline__ void grid_copy(void *dst, const void *src, u64 n) {
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 done = 0;
    if ((((u64)dst | (u64)src) & 15) == 0) {
        const u64 nv = n / 16;
        for (u64 i = tid; i < nv; i += stride)
            ((vec16 *)dst)[i] = ((const vec16 *)src)[i];
        done = nv * 16;
    }
    for (u64 i = done + tid; i < n; i += stride)
        ((u8 *)dst)[i] = ((const u8 *)src)[i];
}

// With a copy or flags, launch one block, or several with counter set (the
// last block to finish its copy signals for all; at most as many blocks as
// can be resident at once, since each waits for the peers); with neither,
// any grid: a reduction whose result is also pushed into the outs (the
// mapped mode's reduce-scatter + allgather in one pass).
__device__ __forceinline__ void direct_sync(const DirectArgs &a) {
    bool sync = a.ncopy != 0;
#pragma unroll
    for (int j = 0; j < GX_MAX_INPUTS; j++) sync = sync || a.peer_flag[j] || a.my_flag[j];
    if (sync) {
    grid_copy(a.slot, a.src, a.ncopy);
    __threadfence_system();  // each thread's copy reaches memory before the signal
    __syncthreads();
    if (threadIdx.x == 0) {
        // Several blocks: the last to arrive (every other block's copy
        // fenced before its arrival) signals for the launch.
        bool last = true;
        if (a.counter) last = atomicAdd(&a.counter[0], 1u) + 1u == a.target;
        if (last) {
            __threadfence_system();
#pragma unroll
            for (int j = 0; j < GX_MAX_INPUTS; j++)
                if (a.peer_flag[j]) *(volatile u32 *)a.peer_flag[j] = a.seq;
        }
#pragma unroll
        for (int j = 0; j < GX_MAX_INPUTS; j++)
            if (a.my_flag[j])
                while ((int)(*a.my_flag[j] - a.seq) < 0) asm volatile("nanosleep.u32 32;");
        __threadfence_system();  // the peers' slots are read after their flags
    }
    __syncthreads();
    }
}

// direct_done tells the host the call is complete: every thread's output
// is written and fenced before seq reaches the host-mapped word, which the
// host polls instead of waiting for the launch to retire. With several
// blocks, the last block to finish stores it.
__device__ __forceinline__ void direct_done(const DirectArgs &a) {
    if (!a.done) return;
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x != 0) return;
    if (a.counter && atomicAdd(&a.counter[1], 1u) + 1u != a.target) return;
    __threadfence_system();
    *a.done = a.seq;
}

template <template <typename> class OP, typename T>
__device__ __forceinline__ void direct_body(const DirectArgs &a) {
    direct_sync(a);
    if (a.reduce) reduce_body<OP, T, 0, 1>(a.r, a.outs);
    direct_done(a);
}

// gompix_direct_gather: the same copy, signal and wait, then (if reduce is
// set) r.k blocks of r.n bytes: block j from r.in[j] to r.out + j * r.n.
// Small allgather, bcast and alltoall in one launch (one block).
extern "C" __global__ void __launch_bounds__(GX_BLOCK) gompix_direct_gather(const DirectArgs a) {
    direct_sync(a);
    if (a.reduce)
        for (u32 j = 0; j < a.r.k && j < GX_MAX_INPUTS; j++)
            if (a.r.in[j]) grid_copy((u8 *)a.r.out + (u64)j * a.r.n, a.r.in[j], a.r.n);
    direct_done(a);
}

GX_ALL_TYPES(sum, OpSum)
GX_ALL_TYPES(prod, OpProd)
GX_ALL_TYPES(min, OpMin)
GX_ALL_TYPES(max, OpMax)
GX_ALL_TYPES(land, OpLand)
GX_ALL_TYPES(lor, OpLor)
GX_ALL_TYPES(lxor, OpLxor)
GX_INT_TYPES(band, OpBand)
GX_INT_TYPES(bor, OpBor)
GX_INT_TYPES(bxor, OpBxor)
GX_ALL_TYPES(avg, OpAvg)

// ---- stream flags -------------------------------------------------------------------
// One thread each. The flag lives in host-mapped (pinned, DEVICEMAP) memory.

extern "C" __global__ void gompix_wait_flag(const volatile u32 *flag, u32 value) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    while (*flag < value) {
        asm volatile("nanosleep.u32 64;");
    }
    __threadfence_system();  // later work sees what the host wrote before the flag
}

extern "C" __global__ void gompix_write_flag(volatile u32 *flag, u32 value) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    __threadfence_system();  // earlier writes of this stream reach memory first
    *flag = value;
    __threadfence_system();
}
