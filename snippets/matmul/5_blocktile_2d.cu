// Rung 5: each thread computes an 8x8 square of results from 8 values of A and 8 of B held in
// registers: 64 FMAs for 16 shared-memory loads instead of 8 for 9. Blocks grow to 128x128
// with 256 threads (the tile is in block_tile.cuh, shared with rungs 6 to 9). Needs M and N
// multiples of 128 and K a multiple of 8.
#include "block_tile.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_blocktile_2d(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x, tcol = t % (BN / TN), trow = t / (BN / TN);
    // Offsets inside a tile stay int, which keeps the loads' address math short (64-bit made
    // this loop 17% longer): 128 x K and 8 x N stay below 2^31 (the launch checks).
    if (!to_block_tile(A, B, C, M, N, K)) return;
    float acc[TM][TN] = {{0.0f}};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = t; i < BM * BK; i += THREADS) As[i] = A[(i / BK) * K + i % BK];
        for (int i = t; i < BK * BN; i += THREADS) Bs[i] = B[(i / BN) * N + i % BN];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int k = 0; k < BK; ++k) {
            for (int i = 0; i < TM; ++i) a[i] = As[(trow * TM + i) * BK + k];
            for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + tcol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) C[(size_t)(trow * TM + i) * N + tcol * TN + j] = acc[i][j];
}
// --8<-- [end:kernel]
