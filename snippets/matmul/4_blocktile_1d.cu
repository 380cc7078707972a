// Rung 4: each thread computes a column of TM = 8 results instead of one. The element of B it
// needs is loaded once from shared memory into a register and used 8 times, so shared-memory
// traffic per FMA drops 8x. Needs M and N multiples of 64 and K a multiple of 8.
#define BM 64
#define BN 64
#define BK 8
#define TM 8

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(BM * BN / TM)
matmul_blocktile_1d(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;                         // 512 threads
    const int tcol = t % BN, trow = t / BN;            // this thread's results: rows trow*TM + i
    // gridDim.y stops at 65535: rows of tiles past it go on along z (and the last z-slice's
    // extra blocks leave). Offsets are 64-bit, widened before the multiplies: past 2^31 floats.
    const int bx = blockIdx.x, by = blockIdx.z * gridDim.y + blockIdx.y;
    if (by >= M / BM) return;
    A += (size_t)by * BM * K + (size_t)(t / BK) * K + t % BK;  // this thread's float of A's tile
    B += bx * BN + (size_t)(t / BN) * N + t % BN;              // and of B's
    C += (size_t)by * BM * N + bx * BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[(t / BK) * BK + t % BK] = *A;  // 64x8 tile, one float each
        Bs[(t / BN) * BN + t % BN] = *B;  // 8x64 tile
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
        for (int k = 0; k < BK; ++k) {
            float b = Bs[k * BN + tcol];
            for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) C[(size_t)(trow * TM + i) * N + tcol] = acc[i];
}
// --8<-- [end:kernel]
