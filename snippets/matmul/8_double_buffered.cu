// Rung 8: double buffering. Rung 7 waits twice per tile: for global memory, then at the
// barrier. Here the next tile's floats are loaded into registers while the current tile is
// multiplied, then stored into a second shared-memory buffer, so one barrier per tile is
// enough and memory latency hides behind 512 FMAs per thread. Same warp-tile layout as rung 7.
// Needs M and N multiples of 128 and K a multiple of 8.
#include "warp_tile.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 2)
matmul_double_buffered(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x, row0 = warp_row(t), col0 = warp_col(t);
    const Float4Slot s = float4_slot(t);
    if (!to_block_tile(A, B, C, M, N, K)) return;
    A += (size_t)s.a_row * K + s.a_col;  // this thread's float4 of A's tile, and of B's
    B += (size_t)s.b_row * N + s.b_col;
    float a[TM], b[TN];
    float acc[TM][TN] = {{0.0f}};

    float4 va = *reinterpret_cast<const float4*>(A);
    float4 vb = *reinterpret_cast<const float4*>(B);
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        store_transposed(As[buf], s.a_row, s.a_col, va);
        *reinterpret_cast<float4*>(&Bs[buf][s.b_row][s.b_col]) = vb;
        // One barrier per tile: the buffer written here was last read two tiles ago, before
        // the previous barrier.
        __syncthreads();
        if (k0 + BK < K) {  // the next tile's loads are in flight during the FMAs below
            A += BK;
            // The step down B stays int (64-bit made ptxas issue these loads late, and the rung slower):
            // 8 x N stays below 2^31 (the launch checks).
            B += BK * N;
            va = *reinterpret_cast<const float4*>(A);
            vb = *reinterpret_cast<const float4*>(B);
        }
        multiply_warp_tile(acc, a, b, As[buf], Bs[buf], row0, col0);
        buf ^= 1;
    }
    store_warp_tile(C, N, acc, row0, col0);
}
// --8<-- [end:kernel]
