// Rung 7: warp tiling. The block's 128x128 tile is split into eight 32x64 warp tiles, and a
// thread's 8x8 results are four 4x4 pieces spread across its warp's tile. A warp then reads
// only 4 distinct float4 of A and 8 of B per step (one 128-byte shared-memory wavefront
// each) instead of 16 of B, and A's transposed tile is padded by 4 floats so that storing it
// hits 32 different banks (the layout, the products and the stores are in warp_tile.cuh,
// shared with rungs 8 and 9). Needs M and N multiples of 128 and K a multiple of 8.
#include "warp_tile.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_warptile(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x, row0 = warp_row(t), col0 = warp_col(t);
    if (!to_block_tile(A, B, C, M, N, K)) return;
    float a[TM], b[TN];
    float acc[TM][TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles(As, Bs, A, B, N, K);
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
        multiply_warp_tile(acc, a, b, As, Bs, row0, col0);
        __syncthreads();
    }
    store_warp_tile(C, N, acc, row0, col0);
}
// --8<-- [end:kernel]
