// Rung 6: persistent blocks in clusters of two that share B's k-tiles (persistent_gemm.cuh),
// through 4 stages, writing C in fp32 straight from the registers.
// Takes any M; N and K multiples of 8 (TMA's rows are a multiple of 16 bytes).
// needs: sm_90a (wgmma, setmaxnreg, clusters and the TMA)
#include "persistent_gemm.cuh"

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
matmul_persistent(const CUtensorMap* map_a, const CUtensorMap* map_b, float* C, int M, int N, int K)
{
    persistent_gemm<float, 4>(map_a, map_b, C, nullptr, M, N, K);
}
