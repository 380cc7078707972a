// The warp tiling of rungs 7 to 9: the block's 128x128 tile is split into eight 32x64 warp
// tiles, and a thread's 8x8 results are four 4x4 pieces spread across its warp's tile.
#pragma once
#include "block_tile.cuh"

#define PAD 4  // A's transposed tile is padded by 4 floats: storing it hits 32 different banks

// Warps form a 4x2 grid of 32x64 tiles; lanes an 8x4 grid inside their warp's tile. Thread t's
// results are rows warp_row(t)..+3 and +16..+19, columns warp_col(t)..+3 and +32..+35.
__device__ __forceinline__ int warp_row(int t)
{
    const int warp = t / 32, lane = t % 32;
    return (warp / 2) * 32 + (lane / 8) * 4;
}

__device__ __forceinline__ int warp_col(int t)
{
    const int warp = t / 32, lane = t % 32;
    return (warp % 2) * 64 + (lane % 8) * 4;
}

// One tile's products: per step of k a warp reads only 4 distinct float4 of A and 8 of B (one
// 128-byte shared-memory wavefront each) into a and b, and each thread does 64 FMAs. a and b
// are the caller's, declared before acc: declared here, or after acc, they made rungs 7 and 8
// slower (ptxas allocates the FMAs' registers worse; the arithmetic is the same).
__device__ __forceinline__ void multiply_warp_tile(float (&acc)[TM][TN], float (&a)[TM], float (&b)[TN],
                                                   const float (&As)[BK][BM + PAD], const float (&Bs)[BK][BN],
                                                   int row0, int col0)
{
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[k][row0]);
        *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[k][row0 + 16]);
        *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[k][col0]);
        *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[k][col0 + 32]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
}

// The thread's four 4x4 pieces of C, a float4 per row of each.
__device__ __forceinline__ void store_warp_tile(float* C, int N, const float (&acc)[TM][TN], int row0, int col0)
{
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int row = row0 + (i % 4) + (i / 4) * 16;
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(C + (size_t)row * N + col0 + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
