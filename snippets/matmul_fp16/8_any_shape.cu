// Rung 8: any shape. Rungs 1 to 3 take whole tiles only; the TMA rungs take any M but need rows
// of a multiple of 16 bytes (N and K multiples of 8), since a tensor map's strides must be.
// This is rung 2's pipeline (128x128 tiles, a 4-stage cp.async ring, mma.sync) with every
// edge guarded, in mma_gemm.cuh: a chunk of 8 halves past M, N or K reads zeros, which add
// nothing to a sum; a result past M or N is not stored. Where K or N is no multiple of 8, rows
// no longer start on 16-byte boundaries, and their chunks are read a half at a time.
// needs: sm_80 (cp.async copies)
#include "mma_gemm.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(128)
matmul_mma_any_shape(const half* A, const half* B, float* C, int M, int N, int K)
{
    mma_gemm<128, 128, 32, 4, true>(A, B, C, M, N, K);  // BM, BN, BK, stages, any shape
}
// --8<-- [end:kernel]
