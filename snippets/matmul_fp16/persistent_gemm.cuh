// Rungs 6, 7 and 9: rung 5's warpgroups, made persistent and paired. A block no longer computes one
// tile and exits: as many blocks run as the GPU holds at once, and each walks the tiles (its
// cluster's index, then one step of the grid's clusters further), so the producer is already
// loading the next tile's k-tiles while the consumers store the last one's results. Blocks come in
// clusters of 2 whose tiles lie one above the other, sharing their columns of B: each block loads
// half of B's k-tile and the TMA multicasts it into both, so B crosses from L2 once for two tiles.
// A consumer keeps one k-tile's wgmmas in flight while it issues the next (rung 5 waited for each),
// and frees a stage once the wgmmas reading it are done: in both blocks, since both producers'
// copies land in both. Rung 9's narrow tiles pair side by side instead, sharing their rows of A.
#pragma once
#include "wgmma_gemm.cuh"

#define BM 128
#define CONSUMERS 2
#define CLUSTER 2
#define THREADS (128 * (1 + CONSUMERS))

// A block's place in its ring of Stages stages: the stage, and the parity of its round.
template <int Stages>
struct Ring {
    int stage = 0;
    unsigned phase = 0;

    __device__ __forceinline__ void next()
    {
        if (++stage == Stages) stage = 0, phase ^= 1;
    }
};

// Rung 7's epilogue: a consumer's 64 x BN accumulators, rounded to fp16, into `out` as BN / 64
// boxes of 64 x 64 laid out as a 128-byte-swizzled TMA load would (16-byte chunk j of row r at
// chunk j ^ r % 8, so the 8 rows a warp writes at once fall in 8 different banks' groups), then
// stored by the TMA while the consumer goes on to its next tile. `out` is written again only
// once the last tile's stores have read it.
template <int BN_>
__device__ __forceinline__ void store_tile_tma(const float (&d)[BN_ / 2], half* out, const CUtensorMap* map_c,
                                               int m0, int n0, int barrier)
{
    bool leader = threadIdx.x % 128 == 0;
    if (leader) tma_store_wait_read<0>();
    barrier_sync(barrier, 128);
    int t = threadIdx.x % 128, row = 16 * (t / 32) + (t % 32) / 4;
    char* bytes = reinterpret_cast<char*>(out);
#pragma unroll
    for (int j = 0; j < BN_ / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int r = row + 8 * h, c = 8 * (j % 8) + 2 * (t % 4);  // column c of box j / 8
            int offset = j / 8 * 64 * 128 + r * 128 + ((c / 8) ^ (r % 8)) * 16 + c % 8 * 2;
            *reinterpret_cast<half2*>(bytes + offset) = __floats2half2_rn(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
    fence_proxy_async();
    barrier_sync(barrier, 128);
    if (leader) {
        for (int b = 0; b < BN_ / 64; ++b) tma_store_2d(map_c, out + b * 64 * 64, n0 + 64 * b, m0);
        tma_store_commit();
    }
}

// --8<-- [start:kernel]
// Which operand a cluster's blocks share: each block loads its share of that operand's k-tile
// and the TMA multicasts it into all of them.
enum class Share { B, A };

// Out: float (rung 6, stored from registers) or half (rungs 7 and 9, through shared memory and
// the TMA, which needs `map_c`). BN: the tile's columns. Shared: B, whose columns the cluster's
// blocks have in common when their tiles lie one above the other; or A, whose rows they have
// in common when their tiles lie side by side (rung 9's narrow tiles), each loading BM / CLUSTER
// of them.
template <typename Out, int Stages, int BN = 256, Share Shared = Share::B>
__device__ __forceinline__ void persistent_gemm(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                Out* C, const CUtensorMap* map_c, int M, int N, int K)
{
    constexpr bool tma_store = std::is_same_v<Out, half>;
    // A cluster's tile: CM x BM rows by CN x BN columns; block `rank` computes its rank-th tile.
    constexpr int CM = Shared == Share::B ? CLUSTER : 1, CN = CLUSTER / CM, A_SHARE = BM / CLUSTER;
    extern __shared__ unsigned char raw[];
    __shared__ uint64_t full[Stages], empty[Stages];
    half* As = align_1024<half>(raw);  // Stages x BM x BK
    half* Bs = As + Stages * BM * BK;  // Stages x (BN / 64) x BK x 64
    half* Cs = Bs + Stages * BK * BN;  // fp16 C: CONSUMERS x (BN / 64) x 64 x 64
    unsigned rank = cluster_rank();
    int tiles_k = (K + BK - 1) / BK, warpgroup = threadIdx.x / 128;
    int tiles = (M + CM * BM - 1) / (CM * BM) * ((N + CN * BN - 1) / (CN * BN));
    int first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
    auto corner = [&](int t) {  // where this block's tile of the cluster's t-th tile starts
        TilePosition p = tile_position(t, M, N, CM * BM, CN * BN);
        return TilePosition{p.m0 + (CM > 1 ? int(rank) * BM : 0), p.n0 + (CN > 1 ? int(rank) * BN : 0)};
    };
    if (threadIdx.x == 0) {
        // full: this block's copy of a stage has landed (its own share and its peers' shares);
        // empty: every consumer of the cluster is done with the stage.
        for (int s = 0; s < Stages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], CONSUMERS * CLUSTER);
        mbar_init_fence();
    }
    cluster_sync();  // no copy or arrival from a peer reaches a barrier before it is initialised

    if (warpgroup == 0) {  // the producer
        registers_shrink<40>();
        if (threadIdx.x == 0) {
            tma_descriptor_acquire(map_a), tma_descriptor_acquire(map_b);
            Ring<Stages> ring;
            for (int t = first; t < tiles; t += step) {
                TilePosition p = corner(t);
                for (int kt = 0; kt < tiles_k; ++kt, ring.next()) {
                    mbar_wait(&empty[ring.stage], ring.phase ^ 1);  // the stage's last round was read (none at first)
                    uint64_t* bar = &full[ring.stage];
                    half *a = As + ring.stage * BM * BK, *b = Bs + ring.stage * BK * BN;
                    mbar_expect_bytes(bar, (BM + BN) * BK * 2);
                    if constexpr (Shared == Share::B) {
                        tma_load_2d(a, map_a, bar, kt * BK, p.m0);
                        for (int j = rank; j < BN / 64; j += CLUSTER)  // this block's share of B's 64-column slabs
                            tma_load_2d_multicast(b + j * BK * 64, map_b, bar, p.n0 + 64 * j, kt * BK, (1 << CLUSTER) - 1);
                    } else {
                        tma_load_2d_multicast(a + rank * A_SHARE * BK, map_a, bar, kt * BK, p.m0 + rank * A_SHARE,
                                              (1 << CLUSTER) - 1);  // this block's share of A's rows
                        for (int j = 0; j < BN / 64; ++j) tma_load_2d(b + j * BK * 64, map_b, bar, p.n0 + 64 * j, kt * BK);
                    }
                }
            }
        }
    } else {
        registers_grow<232>();  // a consumer: rows 64 (warpgroup - 1) to 64 warpgroup - 1 of the block's tile
        int rows = 64 * (warpgroup - 1);
        bool leader = threadIdx.x % 128 == 0;
        auto release = [&](int stage) {
            if (leader)
                for (unsigned r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[stage], r);
        };
        if (tma_store && leader) tma_descriptor_acquire(map_c);
        Ring<Stages> ring;
        for (int t = first; t < tiles; t += step) {
            TilePosition p = corner(t);
            float d[BN / 2] = {};
            int before = -1;  // the stage of the k-tile before
            for (int kt = 0; kt < tiles_k; ++kt, ring.next()) {
                mbar_wait(&full[ring.stage], ring.phase);
                fence_registers(d);
                wgmma_fence();
                mma_k_tile<BN>(d, As + ring.stage * BM * BK + rows * BK, Bs + ring.stage * BK * BN);
                wgmma_commit();
                wgmma_wait<1>();  // this k-tile's wgmmas may still run; the one's before are done
                fence_registers(d);
                if (before >= 0) release(before);
                before = ring.stage;
            }
            wgmma_wait<0>();
            fence_registers(d);
            release(before);
            if constexpr (tma_store) {
                store_tile_tma<BN>(d, Cs + rows * BN, map_c, p.m0 + rows, p.n0, warpgroup);
            } else {
                store_tile<BN>(d, C, M, N, p.m0 + rows, p.n0);
            }
        }
        if (tma_store && leader) tma_store_wait_all();
    }
    cluster_sync();  // no block exits while a peer may still arrive on its barriers
}
// --8<-- [end:kernel]
