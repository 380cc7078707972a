// What the tensor-core rungs share: rows of Q, K or V copied into padded shared memory with
// cp.async, and probabilities packed into mma operands in the input type.
#pragma once
#include "attention.cuh"
#include "tensor_core.cuh"  // cp_async16, ldmatrix_x4(_trans) and mma_16816, shared with matmul_fp16

// --8<-- [start:load_rows]
// ROWS rows, first .. first + ROWS - 1, of one head's N x D matrix `src`, into shared memory `dst`
// with rows D + 8 apart (padded by 16 bytes, so that the 8 row addresses of one ldmatrix fall in
// 8 different 16-byte bank groups), in 16-byte cp.async copies by the block's THREADS threads.
// Rows at or past n are zeros, written directly: a ragged last tile then holds queries and keys
// that score 0 and values of 0, never whatever memory follows the matrix (a NaN there, times a
// weight of 0, would still be NaN).
template <int D, int ROWS, int THREADS, typename T>
__device__ __forceinline__ void load_rows(T* dst, const T* src, int first, int n)
{
    constexpr int CHUNKS = D / 8;             // 16-byte pieces of a row
    constexpr int STEP = THREADS / CHUNKS;    // rows between one thread's pieces
    static_assert(THREADS % CHUNKS == 0 && ROWS % STEP == 0, "every thread copies as many pieces");
    const int r = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS;
    T* to = dst + r * (D + 8) + c * 8;
    const T* from = src + (long long)(first + r) * D + c * 8;
#pragma unroll  // a fixed count: no loop, and offsets that are constants
    for (int i = 0; i < ROWS / STEP; ++i) {
        if (first + r + i * STEP < n) cp_async16(to + i * STEP * (D + 8), from + i * STEP * D);
        else *reinterpret_cast<uint4*>(to + i * STEP * (D + 8)) = make_uint4(0, 0, 0, 0);
    }
}
// --8<-- [end:load_rows]

// Two floats rounded to the input type (to nearest) in one register, the first in the low half:
// the order in which an mma operand register holds two consecutive elements.
__device__ __forceinline__ unsigned pack(float lo, float hi, __half)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
}

__device__ __forceinline__ unsigned pack(float lo, float hi, __nv_bfloat16)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
}
