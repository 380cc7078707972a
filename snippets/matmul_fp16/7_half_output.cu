// Rung 7: rung 6 writing C in fp16, rounded to nearest, as cublasHgemm and torch.matmul do: half
// the bytes out. Stored from registers, as rung 6 does, two halves a thread are 4 bytes: a
// warp's store covers half a sector in each of 8 rows, in as many instructions as fp32. So each
// consumer writes its 64 x 256 tile into shared memory, swizzled, and the TMA stores it while
// the consumer goes on to its next tile. The 64 KB that takes leaves room for 3 stages, not 4.
// It still accumulates in fp32; Hgemm accumulates in fp16.
// Takes any M; N and K multiples of 8 (TMA's rows are a multiple of 16 bytes).
// needs: sm_90a (wgmma, setmaxnreg, clusters and the TMA)
#include "persistent_gemm.cuh"

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
matmul_persistent_half(const CUtensorMap* map_a, const CUtensorMap* map_b, const CUtensorMap* map_c,
                       int M, int N, int K)
{
    persistent_gemm<half, 3>(map_a, map_b, nullptr, map_c, M, N, K);
}
