// Rung 10: cuBLAS's shape. Rung 8 keeps 16 warps on an SM but leaves issue slots empty at
// its barriers and loads; cuBLAS's kernel (its profile is on the page) runs 8 warps, each thread
// with 128 results, fed by a ring of asynchronous copies. So here: a block of 256 threads per
// 128x256 tile of C, 16x8 results per thread (128 FMAs for six shared-memory loads; rung 8 does
// 64 for four), one block per SM (ring_tile.cuh). Tiles of A and B reach shared memory by
// cp.async three tiles ahead (four stages), with no register on the way and one barrier per 16
// steps along K.
// Needs M a multiple of 128, N of 256 and K of 16.
// needs: sm_80 (cp.async copies)
#include "ring_tile.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_async_ring(const float* A, const float* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char shared[];
    Stage* stages = reinterpret_cast<Stage*>(shared);
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;  // y-blocks past 65535 on z
    if (by >= M / BM) return;
    A += (size_t)by * BM * K;
    B += bx * BN;
    C += (size_t)by * BM * N + bx * BN;
    const int t = threadIdx.x, r0 = row0(t), c0 = col0(t), tiles = K / BK;
    float acc[TM][TN] = {{0.0f}};

    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) load_tile(stages[s], A, B, N, K, s);
        cp_async_commit();  // a group per tile, empty or not: the wait below counts groups
    }
    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed...
        __syncthreads();              // ...and everyone's; and tile kt-1's stage is free
        const int next = kt + STAGES - 1;
        if (next < tiles) load_tile(stages[next % STAGES], A, B, N, K, next);
        cp_async_commit();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            fragments(a, b, stages[kt % STAGES], k, r0, c0);
            multiply(acc, a, b);
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* out = C + (size_t)(r0 + i % 4 + 16 * (i / 4)) * N + c0;
#pragma unroll
        for (int j = 0; j < 2; ++j)
            *reinterpret_cast<float4*>(out + 32 * j) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    }
}
// --8<-- [end:kernel]
