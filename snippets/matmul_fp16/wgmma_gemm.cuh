// What rungs 4 and 5 share: where a block's tile lies, loading one k-tile with TMA, one
// k-tile's wgmmas for a warpgroup, and the store of its accumulators. The Hopper primitives
// themselves (mbarriers, TMA, wgmma) are the engine's hopper.cuh.
#pragma once
#include "hopper.cuh"

#define BK 64  // K per stage: one 128-byte swizzled row of halves
#define GROUP 8

// Tiles are numbered in groups of GROUP tile rows, down each column of tiles within a group, so
// that the tiles computed at once share rows of A and columns of B in L2 (Triton's ordering).
struct TilePosition {
    int m0, n0;
};

__device__ __forceinline__ TilePosition tile_position(unsigned tile, int M, int N, int BM, int BN)
{
    int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int per_group = GROUP * tiles_n, first = tile / per_group * GROUP, i = tile % per_group;
    int rows = min(tiles_m - first, GROUP);
    return {(first + i % rows) * BM, i / rows * BN};
}

// One k-tile into a stage: A's BM x BK and B's BK x BN, two TMA tile loads that each arrive on
// the stage's `full` barrier with their bytes, so that it expects K_TILE_ARRIVALS arrivals.
#define K_TILE_ARRIVALS 2
template <int BM, int BN>
__device__ __forceinline__ void load_k_tile(half* As, half* Bs, const CUtensorMap* map_a, const CUtensorMap* map_b,
                                            uint64_t* full, int m0, int n0, int k0)
{
    tma_load_tile<BK>(As, map_a, full, BM, k0, m0);
    tma_load_tile<BN>(Bs, map_b, full, BK, n0, k0);
}

// The 64-column shape, for rung 9's narrowest tiles (the wider ones are the engine's hopper.cuh).
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t desc_a, uint64_t desc_b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WGMMA_REGS32 "}, %32, %33, 1, 1, 1, 0, 1;\n"
                 : WGMMA_ACC32 : "l"(desc_a), "l"(desc_b));
}

// --8<-- [start:mma]
// One k-tile for one warpgroup: its 64 rows of A against all BN columns of B, in 4 wgmmas of
// K = 16. Along K, A's next 16 halves are 32 bytes further along its swizzled rows; B's next 16
// rows are 16 x 128 bytes further down each 64-column slab, and its slabs are 64 x 128 bytes apart.
template <int BN>
__device__ __forceinline__ void mma_k_tile(float (&d)[BN / 2], const half* As, const half* Bs)
{
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) {
        uint64_t a = wgmma_desc(As + 16 * k, 16, 1024);
        uint64_t b = wgmma_desc(Bs + 16 * k * 64, BK * 128, 1024);
        if constexpr (BN == 256) {
            wgmma_m64n256k16(d, a, b);
        } else if constexpr (BN == 128) {
            wgmma_m64n128k16(d, a, b);
        } else {
            wgmma_m64n64k16(d, a, b);
        }
    }
}
// --8<-- [end:mma]

// A warpgroup's 64 x BN accumulators into C (fp32, row-major) at row m0, column n0. Thread t
// holds rows 16 (t / 32) + (t % 32) / 4 and 8 below it, columns 2 (t % 4) + 8 j and the next;
// N is a multiple of 8, so such a pair of columns is inside C or outside it together.
template <int BN>
__device__ __forceinline__ void store_tile(const float (&d)[BN / 2], float* C, int M, int N, int m0, int n0)
{
    int t = threadIdx.x % 128, row = m0 + 16 * (t / 32) + (t % 32) / 4, col = n0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = row + 8 * h, c = col + 8 * j;
            if (r < M && c < N)
                *reinterpret_cast<float2*>(C + (size_t)r * N + c) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
}
