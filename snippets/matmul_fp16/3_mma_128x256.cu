// Rung 3: the same pipeline with a 128x256 block tile and 8 warps. Each k-tile brings in
// (128 + 256) x 32 halves for 128 x 256 x 32 multiply-adds: 25% fewer bytes per flop than
// rung 2's 128x128 tile, from L2 and global memory alike. One block per SM (its registers
// fill the SM); 4 stages of 27 KB each.
// Needs M a multiple of 128, N of 256 and K of 32.
#include "mma_gemm.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(256)
matmul_mma_128x256(const half* A, const half* B, float* C, int M, int N, int K)
{
    mma_gemm<128, 256, 4>(A, B, C, N, K);  // BM, BN, stages
}
// --8<-- [end:kernel]
