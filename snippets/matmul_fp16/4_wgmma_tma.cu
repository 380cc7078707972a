// Rung 4: Hopper's own instructions. The TMA unit copies each k-tile into shared memory on one
// thread's request, 128-byte-swizzled and zero-filled past the matrix's edges, and signals an
// mbarrier when the bytes have landed; wgmma multiplies straight from shared memory, a
// warpgroup (4 warps) at a time, with no ldmatrix and no fragments in registers. One warpgroup
// computes a 128 x 128 tile as two 64-row halves; thread 0 keeps 3 k-tiles in flight ahead.
// Takes any M; N and K multiples of 8 (TMA's rows are a multiple of 16 bytes).
// needs: sm_90a (wgmma and the TMA)
#include "wgmma_gemm.cuh"

#define BM 128
#define BN 128
#define STAGES 4

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(128)
matmul_wgmma_tma(const CUtensorMap* map_a, const CUtensorMap* map_b, float* C,
                 int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    __shared__ uint64_t full[STAGES];  // stage s holds k-tile kt (kt % STAGES == s) once its phase completes
    half* As = align_1024<half>(raw);  // STAGES x BM x BK
    half* Bs = As + STAGES * BM * BK;  // STAGES x (BN / 64) x BK x 64
    TilePosition p = tile_position(blockIdx.x, M, N, BM, BN);
    int tiles_k = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], K_TILE_ARRIVALS);
        mbar_init_fence();
        tma_descriptor_acquire(map_a), tma_descriptor_acquire(map_b);
        for (int kt = 0; kt < STAGES - 1 && kt < tiles_k; ++kt)
            load_k_tile<BM, BN>(As + kt * BM * BK, Bs + kt * BK * BN, map_a, map_b, &full[kt], p.m0, p.n0, kt * BK);
    }
    __syncthreads();
    float top[BN / 2] = {}, bottom[BN / 2] = {};  // rows 0-63 and 64-127 of the tile
    for (int kt = 0; kt < tiles_k; ++kt) {
        int s = kt % STAGES, ahead = kt + STAGES - 1;
        if (threadIdx.x == 0 && ahead < tiles_k)  // its stage was last read before the barrier below
            load_k_tile<BM, BN>(As + ahead % STAGES * BM * BK, Bs + ahead % STAGES * BK * BN, map_a, map_b,
                                &full[ahead % STAGES], p.m0, p.n0, ahead * BK);
        mbar_wait(&full[s], kt / STAGES % 2);
        fence_registers(top), fence_registers(bottom);
        wgmma_fence();
        mma_k_tile<BN>(top, As + s * BM * BK, Bs + s * BK * BN);
        mma_k_tile<BN>(bottom, As + s * BM * BK + 64 * BK, Bs + s * BK * BN);
        wgmma_commit();
        wgmma_wait<0>();
        fence_registers(top), fence_registers(bottom);
        __syncthreads();
    }
    store_tile<BN>(top, C, M, N, p.m0, p.n0);
    store_tile<BN>(bottom, C, M, N, p.m0 + 64, p.n0);
}
// --8<-- [end:kernel]
