// What every rung shares: the layout, the two input types read as float, and block reductions.
//
// Q, K and V are (B, H, N, D), contiguous, in fp16 or bf16; O is (B, H, N, D) in float32. Every
// rung launches a grid of (blocks of queries, H, B), so that blockIdx.z is the batch, blockIdx.y
// the head, and each (batch, head) pair owns one N x D matrix of each. Offsets are 64-bit: B x H x
// N x D passes 2^31 elements well before any single matrix does.
//
// Each rung is compiled for both input types and picks one at run time, from its `bf16`
// argument: one uniform branch at the top of the kernel, the same for every thread of the grid.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#define LOG2E 1.4426950408889634f  // exp(x) = exp2(x * log2(e))

// 2^x in one instruction (MUFU.EX2). exp2f adds three around it, to return results below 2^-126
// as denormals; a weight that small, beside the row maximum's weight of 1, counts for nothing,
// so the fast rungs flush it to zero (FlashAttention compiles with --use_fast_math to the same end).
__device__ __forceinline__ float exp2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Which (batch, head) pair this block works on: its N x D matrices start at this times N * D.
__device__ __forceinline__ long long head_index()
{
    return (long long)blockIdx.z * gridDim.y + blockIdx.y;
}

struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// Every lane of each group of WIDTH lanes gets the group's max (or sum).
template <int WIDTH = 32, typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op)
{
    for (int o = WIDTH / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Every thread of the block gets the block's max (or sum). `scratch` holds one float per warp;
// the barrier at the end lets the next call reuse it. Every thread combines the warps' partial
// results in the same order, so all of them get the same bits.
template <typename Op>
__device__ __forceinline__ float block_reduce(float v, float* scratch, Op op)
{
    v = warp_reduce(v, op);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
    for (int w = 1; w < blockDim.x / 32; ++w) r = op(r, scratch[w]);
    __syncthreads();
    return r;
}

// The entry points take the input type and the head dimension at run time (the engine launches
// one function per rung): call BODY<T, D>(...) for the pair they name, D 64 or 128. The
// arguments may name the type as T_ (TYPE_DISPATCH); ATTENTION_DISPATCH casts Q, K and V to it.
#define TYPE_DISPATCH(BODY, d, bf16, ...)                       \
    do {                                                        \
        if (bf16) {                                             \
            using T_ = __nv_bfloat16;                           \
            if ((d) == 64) BODY<T_, 64>(__VA_ARGS__);           \
            else BODY<T_, 128>(__VA_ARGS__);                    \
        } else {                                                \
            using T_ = __half;                                  \
            if ((d) == 64) BODY<T_, 64>(__VA_ARGS__);           \
            else BODY<T_, 128>(__VA_ARGS__);                    \
        }                                                       \
    } while (0)
#define ATTENTION_DISPATCH(BODY, q, k, v, d, bf16, ...) \
    TYPE_DISPATCH(BODY, d, bf16, static_cast<const T_*>(q), static_cast<const T_*>(k), static_cast<const T_*>(v), __VA_ARGS__)
