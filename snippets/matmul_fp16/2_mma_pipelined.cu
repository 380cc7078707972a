// Rung 2: the instructions underneath WMMA, used directly, with a pipeline in front of them
// (the code is in mma_gemm.cuh, shared with rung 3).
// - cp.async copies global memory straight into shared memory without passing through
//   registers, and a 4-stage ring of tiles keeps three tiles in flight while one is used.
// - ldmatrix loads a warp's 16x16 fragments from shared memory in one instruction each
//   (transposing B's on the way), and mma.sync.m16n8k16 multiplies them.
// - Each of the 4 warps owns a 64x64 piece of the 128x128 output: 128 fp32 accumulators per
//   thread, 32 MMAs per 16-wide step of K for 8 fragment loads.
// Needs M and N multiples of 128 and K a multiple of 32.
// needs: sm_80 (cp.async copies)
#include "mma_gemm.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(128)
matmul_mma_pipelined(const half* A, const half* B, float* C, int M, int N, int K)
{
    mma_gemm<128, 128, 32, 4>(A, B, C, M, N, K);  // BM, BN, BK, stages
}
// --8<-- [end:kernel]
