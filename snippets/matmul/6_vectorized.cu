// Rung 6: 16-byte loads and stores. Global memory is read as float4, and A's tile is stored
// transposed (As[k][m]) so that a thread's 8 values of A are two float4 reads of shared memory,
// like its 8 values of B. Needs M and N multiples of 128 and K a multiple of 8.
#include "block_tile.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS)
matmul_vectorized(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x, tcol = t % (BN / TN), trow = t / (BN / TN);
    if (!to_block_tile(A, B, C, M, N, K)) return;
    float acc[TM][TN] = {{0.0f}};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles(As, Bs, A, B, N, K);
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
        for (int k = 0; k < BK; ++k) {
            *reinterpret_cast<float4*>(a) = *reinterpret_cast<const float4*>(&As[k][trow * TM]);
            *reinterpret_cast<float4*>(a + 4) = *reinterpret_cast<const float4*>(&As[k][trow * TM + 4]);
            *reinterpret_cast<float4*>(b) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN]);
            *reinterpret_cast<float4*>(b + 4) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN + 4]);
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(C + (size_t)(trow * TM + i) * N + tcol * TN + j) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
// --8<-- [end:kernel]
