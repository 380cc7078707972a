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
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[(t / BK) * BK + t % BK] = A[(t / BK) * K + t % BK];  // 64x8 tile, one float each
        Bs[(t / BN) * BN + t % BN] = B[(t / BN) * N + t % BN];  // 8x64 tile
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int k = 0; k < BK; ++k) {
            float b = Bs[k * BN + tcol];
            for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) C[(trow * TM + i) * N + tcol] = acc[i];
}
// --8<-- [end:kernel]
