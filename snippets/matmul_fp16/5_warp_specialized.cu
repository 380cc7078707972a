// Rung 5: warp specialisation. Rung 4's warpgroup both loads and multiplies, and waits at a
// block barrier every k-tile. Here one warpgroup only produces (a single thread issues the TMA
// loads) and two consumer warpgroups only multiply, each 64 rows of a 128 x 256 tile, through a
// ring of 4 stages: a stage's `full` barrier says its bytes have landed, its `empty` barrier
// that both consumers are done with it. The producer gives back registers (40 a thread) so the
// consumers can hold 64 x 256 fp32 accumulators each (232). While one consumer waits for its
// wgmmas, the other issues its own, and the producer is already loading stages ahead.
// Takes any M; N and K multiples of 8 (TMA's rows are a multiple of 16 bytes).
// needs: sm_90a (wgmma, setmaxnreg and the TMA)
#include "wgmma_gemm.cuh"

#define BM 128
#define BN 256
#define STAGES 4
#define CONSUMERS 2

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(128 * (1 + CONSUMERS), 1)
matmul_wgmma_specialized(const CUtensorMap* map_a, const CUtensorMap* map_b,
                         float* C, int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    __shared__ uint64_t full[STAGES], empty[STAGES];
    half* As = align_1024<half>(raw);  // STAGES x BM x BK
    half* Bs = As + STAGES * BM * BK;  // STAGES x (BN / 64) x BK x 64
    TilePosition p = tile_position(blockIdx.x, M, N, BM, BN);
    int tiles_k = (K + BK - 1) / BK, warpgroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], K_TILE_ARRIVALS), mbar_init(&empty[s], CONSUMERS);
        mbar_init_fence();
    }
    __syncthreads();

    if (warpgroup == 0) {  // the producer
        registers_shrink<40>();
        if (threadIdx.x == 0) {
            tma_descriptor_acquire(map_a), tma_descriptor_acquire(map_b);
            for (int kt = 0; kt < tiles_k; ++kt) {
                int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(&empty[s], (kt / STAGES - 1) % 2);  // its last round was read
                load_k_tile<BM, BN>(As + s * BM * BK, Bs + s * BK * BN, map_a, map_b, &full[s], p.m0, p.n0, kt * BK);
            }
        }
        return;
    }

    registers_grow<232>();  // a consumer: rows 64 (warpgroup - 1) to 64 warpgroup - 1 of the tile
    int rows = 64 * (warpgroup - 1);
    bool leader = threadIdx.x % 128 == 0;
    float d[BN / 2] = {};
    for (int kt = 0; kt < tiles_k; ++kt) {
        int s = kt % STAGES;
        mbar_wait(&full[s], kt / STAGES % 2);
        fence_registers(d);
        wgmma_fence();
        mma_k_tile<BN>(d, As + s * BM * BK + rows * BK, Bs + s * BK * BN);
        wgmma_commit();
        wgmma_wait<0>();
        fence_registers(d);
        if (leader) mbar_arrive(&empty[s]);  // this warpgroup is done with stage s
    }
    store_tile<BN>(d, C, M, N, p.m0 + rows, p.n0);
}
// --8<-- [end:kernel]
