// Rung 9: rung 7 with a tile that fits the problem. Rung 7's clusters each compute 256 x 256 of
// C, so a small C leaves most of the GPU idle: at 1024 x 1024, 16 clusters of 2 for 132 SMs.
// Where that many wide tiles would leave over half the GPU's clusters without one, this kernel
// takes 128 x 64 tiles instead, four times as many, and 8 stages, which fit beside the smaller C
// tile. Two narrow tiles side by side share their rows of A, so a cluster's blocks split A's
// k-tile between them: each block reads 8 KB of A and 8 KB of B per k-tile, where with the
// wide layout's shared B it would read 16 KB of A and 4 KB of B.
// Takes any M; N and K multiples of 8 (TMA's rows are a multiple of 16 bytes).
// needs: sm_90a (wgmma, setmaxnreg, clusters and the TMA)
#include "persistent_gemm.cuh"

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
matmul_sized_tiles(const CUtensorMap* map_a, const CUtensorMap* map_b, const CUtensorMap* map_c,
                   int M, int N, int K, int narrow)
{
    if (narrow) {
        persistent_gemm<half, 8, 64, Share::A>(map_a, map_b, nullptr, map_c, M, N, K);
    } else {
        persistent_gemm<half, 3>(map_a, map_b, nullptr, map_c, M, N, K);
    }
}
// --8<-- [end:kernel]
