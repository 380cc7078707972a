// Rung 3: the same pipeline with bigger tiles: 128x256 per block (8 warps) and 64 along K.
// Each k-tile brings in (128 + 256) x 64 halves for 128 x 256 x 64 multiply-adds, 25% fewer
// bytes per flop than rung 2's 128x128 tile, and a barrier every 4 MMA steps instead of 2.
// One block per SM (its registers fill the SM); 3 stages of 51 KB each.
// Needs M a multiple of 128, N of 256 and K of 64.
// needs: sm_80 (cp.async copies)
#include "mma_gemm.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(256)
matmul_mma_128x256(const half* A, const half* B, float* C, int M, int N, int K)
{
    mma_gemm<128, 256, 64, 3>(A, B, C, M, N, K);  // BM, BN, BK, stages
}
// --8<-- [end:kernel]
