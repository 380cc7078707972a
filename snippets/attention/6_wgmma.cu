// Rung 6: Hopper's instructions, in FlashAttention-3's division of labour. Rung 5's algorithm,
// with what the fp16 matmul entry's rungs 4 and 5 brought to the H100:
// - A producer warpgroup only loads (one of its threads issues every TMA copy): Q once, then K
//   and V tiles of 128 keys into two stages each, 128-byte-swizzled; an mbarrier says when a
//   tile has landed, another when both consumers are done with its stage.
// - Two consumer warpgroups of 64 queries each (BM = 128) multiply with wgmma: S = Q K^T with
//   both operands read from shared memory by descriptor (no ldmatrix), O += P V with P straight
//   from the registers that held S, rounded and packed as in rungs 4 and 5.
// - wgmma is asynchronous, so a warpgroup overlaps itself: it issues tile t's Q K^T and tile
//   t-1's P V together, and works out tile t's softmax while P V still runs.
// - The two consumers take turns to issue (two named barriers, a ping-pong), so that one's
//   softmax runs while the tensor cores work on the other's products.
// - The producer gives back registers (24 a thread) so that the consumers can have 240: O, S
//   and P of a 64 x 128 tile stay in registers without spilling. One block fills an SM (161
//   KiB of shared memory at D = 128).
// - TMA reads Q, K and V as one (B H N) x D matrix, so a tile that runs past its head's last row
//   holds the next head's rows: their keys are masked like causal ones, and their values are
//   zeroed in shared memory before P V (a NaN there, times a weight of 0, would still be NaN).
// D must be 64 or 128; any N.
// needs: sm_90a (wgmma, setmaxnreg and the TMA)
#include "flash3.cuh"  // the tile sizes, the barriers and the steps of the loop

// --8<-- [start:kernel]
template <typename T, int D>
__device__ __forceinline__ void flash3(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v,
                                       float* O, int n, float scale, int causal)
{
    extern __shared__ unsigned char raw[];
    __shared__ Barriers bar;
    T* qs = align_1024<T>(raw);     // the block's BM queries: D / 64 slabs of BM x 64
    T* ks = qs + BM * D;            // STAGES tiles of BN keys, each D / 64 slabs of BN x 64
    T* vs = ks + STAGES * BN * D;   // and of BN values
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int i0 = (causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;
    const int head = static_cast<int>(head_index()) * n;  // the head's first row (B H N < 2^31)
    const int keys = causal ? min(n, i0 + BM) : n;        // the keys any of the block's queries sees
    const int tiles = (keys + BN - 1) / BN;
    if (threadIdx.x == 0) {
        mbar_init(&bar.q, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&bar.k_full[s], 1), mbar_init(&bar.v_full[s], 1);
            mbar_init(&bar.k_empty[s], CONSUMERS), mbar_init(&bar.v_empty[s], CONSUMERS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= 4 * CONSUMERS) {  // the producer: one thread issues every load
        registers_shrink<24>();
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_descriptor_acquire(map_q), tma_descriptor_acquire(map_k), tma_descriptor_acquire(map_v);
            tma_load_tile<D>(qs, map_q, &bar.q, BM, 0, head + i0);
            for (int t = 0; t < tiles; ++t) {
                const int s = t % STAGES, round = t / STAGES;
                if (round > 0) mbar_wait(&bar.k_empty[s], (round - 1) % 2);  // both consumers are done with it
                tma_load_tile<D>(ks + s * BN * D, map_k, &bar.k_full[s], BN, 0, head + t * BN);
                if (round > 0) mbar_wait(&bar.v_empty[s], (round - 1) % 2);
                tma_load_tile<D>(vs + s * BN * D, map_v, &bar.v_full[s], BN, 0, head + t * BN);
            }
        }
        return;
    }

    // A consumer: queries i0 + 64 wg to i0 + 64 wg + 63; this thread's rows are row0 and row0 + 8.
    registers_grow<240>();
    const int wg = warp / 4;
    const bool leader = threadIdx.x % 128 == 0;
    const int row0 = i0 + 64 * wg + 16 * (warp % 4) + lane / 4;
    const T* q = qs + 64 * wg * 64;
    const float scale_log2 = scale * LOG2E;
    float o[D / 2] = {}, s[BN / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
    unsigned p[BN / 16][4];
    // Tile t needs a mask where a key may be past the end, or (causal) after one of the rows.
    auto masked = [&](int t) { return (t + 1) * BN > n || (causal && (t + 1) * BN - 1 > i0 + 64 * wg); };
    if (wg == 1) barrier_arrive(TURN, 128 * CONSUMERS);  // consumer 0 issues first
    mbar_wait(&bar.q, 0);

    // Tile 0: Q K^T alone, then its softmax.
    mbar_wait(&bar.k_full[0], 0);
    barrier_sync(TURN + wg, 128 * CONSUMERS);
    issue_qk<T, D>(s, q, ks);
    if (tiles > 1 || wg == 0) barrier_arrive(TURN + 1 - wg, 128 * CONSUMERS);
    wgmma_wait<0>();
    fence_registers(s);
    if (leader) mbar_arrive(&bar.k_empty[0]);
    softmax_tile<1>(s, m, l, alpha, row0, 0, n, causal, masked(0), scale_log2);
    pack_p<T>(p, s);

    for (int t = 1; t < tiles; ++t) {
        const int s1 = t % STAGES, s0 = (t - 1) % STAGES;  // tile t's stage, and tile t-1's
        mbar_wait(&bar.k_full[s1], t / STAGES % 2);
        mbar_wait(&bar.v_full[s0], (t - 1) / STAGES % 2);
        barrier_sync(TURN + wg, 128 * CONSUMERS);
        issue_qk<T, D>(s, q, ks + s1 * BN * D);
        issue_pv<T, D>(o, p, vs + s0 * BN * D);
        if (t + 1 < tiles || wg == 0) barrier_arrive(TURN + 1 - wg, 128 * CONSUMERS);
        wgmma_wait<1>();  // Q K^T has landed; P V may still be running
        fence_registers(s);
        if (leader) mbar_arrive(&bar.k_empty[s1]);
        softmax_tile<1>(s, m, l, alpha, row0, t * BN, n, causal, masked(t), scale_log2);
        wgmma_wait<0>();  // and now P V
        fence_registers(o);
        if (leader) mbar_arrive(&bar.v_empty[s0]);
        rescale(o, alpha);
        pack_p<T>(p, s);
    }

    // The last tile's P V. Its values past row n - 1 are the next head's (or TMA's zeros past
    // the matrix): both consumers zero them first, then meet, so that neither multiplies a
    // value the other has yet to zero.
    const int last = tiles - 1, sl = last % STAGES;
    T* vt = vs + sl * BN * D;
    mbar_wait(&bar.v_full[sl], last / STAGES % 2);
    if (last * BN + BN > n) {
        const int valid = n - last * BN, chunks = (BN - valid) * D / 8;  // 16-byte pieces to zero
        for (int c = threadIdx.x; c < chunks; c += 128 * CONSUMERS) {
            const int row = valid + c / 8 % (BN - valid), slab = c / 8 / (BN - valid);
            reinterpret_cast<uint4*>(vt + slab * BN * 64 + row * 64)[c % 8] = make_uint4(0, 0, 0, 0);
        }
        fence_proxy_async();
        barrier_sync(ZEROED, 128 * CONSUMERS);
    }
    issue_pv<T, D>(o, p, vt);
    wgmma_wait<0>();
    fence_registers(o);

    store_o<D>(O, o, l, head, row0, n);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention_wgmma(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v, float* o, int n, int d,
                float scale, int causal, int bf16)
{
    TYPE_DISPATCH(flash3, d, bf16, map_q, map_k, map_v, o, n, scale, causal);
}
// --8<-- [end:kernel]
