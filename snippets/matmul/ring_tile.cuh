// The block tile of rungs 10 and 11, cuBLAS's shape: 256 threads per 128x256 tile of C, 16x8
// results per thread (128 FMAs for six shared-memory loads per step of k), one block per SM.
// Tiles of A and B reach shared memory by cp.async, A transposed on its way (4-byte copies into
// As[k][m]), B's rows 16 bytes at a time, into a ring of STAGES tiles.
#pragma once
#include "async_copy.cuh"

constexpr int BM = 128, BN = 256, BK = 16, STAGES = 4, THREADS = 256;
constexpr int TM = 16, TN = 8;          // a thread's results: 16 rows by 8 columns
constexpr int A_WIDTH = BM + 4;         // As's rows padded: the transposing copies hit 32 banks

struct Stage {
    float a[BK][A_WIDTH];  // A's 128x16 tile, transposed
    float b[BK][BN];
};

// Warps form a 2x4 grid of 64x64 tiles; lanes a 4x8 grid inside theirs. Thread t's results
// are rows row0 + 16i..+3 for i = 0..3, and columns col0..+3 and col0+32..+35: per step of k a
// warp reads 4 distinct float4 of A and 8 of B, each a single shared-memory wavefront.
__device__ __forceinline__ int row0(int t) { return (t / 32 / 4) * 64 + (t % 32 / 8) * 4; }
__device__ __forceinline__ int col0(int t) { return (t / 32 % 4) * 64 + (t % 8) * 4; }

// Tile kt of A (this block's rows, columns kt*BK..) and of B into `s`, 8 columns of A at a
// time: thread t copies 4 floats of A's row t/2 (from column 4*(t%2)), one at a time into As's
// columns, and two float4 of B's 8 rows.
__device__ __forceinline__ void load_tile(Stage& s, const float* A, const float* B, int N, int K, int kt)
{
    const int t = threadIdx.x, r = t / 2, c = 4 * (t % 2);
#pragma unroll
    for (int k8 = 0; k8 < BK; k8 += 8) {
        const float* a = A + (size_t)r * K + kt * BK + k8 + c;
#pragma unroll
        for (int i = 0; i < 4; ++i) cp_async4(&s.a[k8 + c + i][r], a + i);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int k = k8 + t / 64 + 4 * h, n = 4 * (t % 64);
            cp_async16(&s.b[k][n], B + (size_t)(kt * BK + k) * N + n);
        }
    }
}

// Step k's values of A and B for this thread: 4 float4 of A's transposed tile, 2 of B's.
__device__ __forceinline__ void fragments(float (&a)[TM], float (&b)[TN], const Stage& s, int k, int r0, int c0)
{
#pragma unroll
    for (int i = 0; i < 4; ++i)
        *reinterpret_cast<float4*>(a + 4 * i) = *reinterpret_cast<const float4*>(&s.a[k][r0 + 16 * i]);
#pragma unroll
    for (int j = 0; j < 2; ++j)
        *reinterpret_cast<float4*>(b + 4 * j) = *reinterpret_cast<const float4*>(&s.b[k][c0 + 32 * j]);
}

__device__ __forceinline__ void multiply(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN])
{
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
}
