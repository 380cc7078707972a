// Rung 7: rung 6's loop, in blocks that stay. Two things FlashAttention-3 does that rung 6 did not:
// - O is written in the input type (fp16 or bf16, rounded to nearest), as SDPA writes it: half
//   of rung 6's float32 bytes.
// - One block per SM, each taking work items (a block of 128 queries of a head) two at a time:
//   block b takes items 2b and 2b + 1, then 2b + 2G and 2b + 2G + 1 (G: the grid's size), and
//   so on. Items go head by head, so that the blocks at work at once share their heads' K and V
//   in L2. Causal, a head's blocks of queries are taken longest and shortest in turn (the last,
//   the first, the last but one, ...), so each pair holds about the same number of tiles and no
//   block is left with more work than the others. A block's producer loads the next item's Q
//   and first tiles of K and V while its consumers still finish the last tile and write O,
//   where rung 6's next block could start loading only once the SM was free.
// - So Q is reloaded: both consumers say when they are done with it (their last Q K^T has
//   landed), and the stages' barriers count tiles from the block's first tile, not its head's.
// D must be 64 or 128; any N.
// needs: sm_90a (wgmma, setmaxnreg and the TMA)
#include "flash3.cuh"  // the tile sizes, the barriers and the steps of the loop

// --8<-- [start:kernel]
// Work item w: its head's first row, and its first query. Causal, the head's blocks of
// queries go longest and shortest in turn.
__device__ __forceinline__ void work_item(int w, int blocks, int n, int causal, int& head, int& i0)
{
    const int b = w % blocks;
    head = w / blocks * n;
    i0 = (causal ? (b % 2 ? b / 2 : blocks - 1 - b / 2) : b) * BM;
}

// The items a block takes: from 2 blockIdx.x, two at a time, the grid's size of pairs apart.
__device__ __forceinline__ int first_item() { return 2 * blockIdx.x; }
__device__ __forceinline__ int next_item(int w) { return w % 2 ? w - 1 + 2 * gridDim.x : w + 1; }

template <typename T, int D>
__device__ __forceinline__ void flash3_persistent(const CUtensorMap* map_q, const CUtensorMap* map_k,
                                                  const CUtensorMap* map_v, T* O, int n, int heads, float scale,
                                                  int causal)
{
    extern __shared__ unsigned char raw[];
    __shared__ Barriers bar;
    T* qs = align_1024<T>(raw);     // the block's BM queries: D / 64 slabs of BM x 64
    T* ks = qs + BM * D;            // STAGES tiles of BN keys, each D / 64 slabs of BN x 64
    T* vs = ks + STAGES * BN * D;   // and of BN values
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int blocks = (n + BM - 1) / BM, items = blocks * heads;
    // The tiles of keys the queries from i0 see.
    auto tiles_from = [&](int i0) { return ((causal ? min(n, i0 + BM) : n) + BN - 1) / BN; };
    if (threadIdx.x == 0) {
        mbar_init(&bar.q, 1), mbar_init(&bar.q_empty, CONSUMERS);
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
            int it = 0;  // tiles loaded so far: tile `it` goes to stage it % STAGES
            for (int w = first_item(), round_q = 0; w < items; w = next_item(w), ++round_q) {
                int head, i0;
                work_item(w, blocks, n, causal, head, i0);
                if (round_q > 0) mbar_wait(&bar.q_empty, (round_q - 1) % 2);  // both consumers are done with Q
                tma_load_tile<D>(qs, map_q, &bar.q, BM, 0, head + i0);
                for (int t = 0, tiles = tiles_from(i0); t < tiles; ++t, ++it) {
                    const int s = it % STAGES, round = it / STAGES;
                    if (round > 0) mbar_wait(&bar.k_empty[s], (round - 1) % 2);
                    tma_load_tile<D>(ks + s * BN * D, map_k, &bar.k_full[s], BN, 0, head + t * BN);
                    if (round > 0) mbar_wait(&bar.v_empty[s], (round - 1) % 2);
                    tma_load_tile<D>(vs + s * BN * D, map_v, &bar.v_full[s], BN, 0, head + t * BN);
                }
            }
        }
        return;
    }

    // A consumer: queries i0 + 64 wg to i0 + 64 wg + 63 of each item; its rows are row0 and row0 + 8.
    registers_grow<240>();
    const int wg = warp / 4;
    const bool leader = threadIdx.x % 128 == 0;
    const T* q = qs + 64 * wg * 64;
    const float scale_log2 = scale * LOG2E;
    unsigned p[BN / 16][4];
    // The consumers take turns to issue across items too: consumer 0 first, each handing the
    // turn to the other after every issue.
    if (wg == 1) barrier_arrive(TURN, 128 * CONSUMERS);
    int it = 0;  // the item's first tile, counted as the producer counts them
    for (int w = first_item(), round_q = 0; w < items; w = next_item(w), ++round_q) {
        int head, i0;
        work_item(w, blocks, n, causal, head, i0);
        const int tiles = tiles_from(i0), row0 = i0 + 64 * wg + 16 * (warp % 4) + lane / 4;
        float o[D / 2] = {}, s[BN / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
        auto masked = [&](int t) { return (t + 1) * BN > n || (causal && (t + 1) * BN - 1 > i0 + 64 * wg); };
        // Tile t's Q K^T has landed: free its K, and Q after the last.
        auto done_with_k = [&](int t) {
            if (!leader) return;
            mbar_arrive(&bar.k_empty[(it + t) % STAGES]);
            if (t == tiles - 1) mbar_arrive(&bar.q_empty);
        };
        mbar_wait(&bar.q, round_q % 2);

        // Tile 0: Q K^T alone, then its softmax.
        mbar_wait(&bar.k_full[it % STAGES], it / STAGES % 2);
        barrier_sync(TURN + wg, 128 * CONSUMERS);
        issue_qk<T, D>(s, q, ks + it % STAGES * BN * D);
        barrier_arrive(TURN + 1 - wg, 128 * CONSUMERS);
        wgmma_wait<0>();
        fence_registers(s);
        done_with_k(0);
        softmax_tile<4>(s, m, l, alpha, row0, 0, n, causal, masked(0), scale_log2);
        pack_p<T>(p, s);

        for (int t = 1; t < tiles; ++t) {
            const int s1 = (it + t) % STAGES, s0 = (it + t - 1) % STAGES;  // tile t's stage, and tile t-1's
            mbar_wait(&bar.k_full[s1], (it + t) / STAGES % 2);
            mbar_wait(&bar.v_full[s0], (it + t - 1) / STAGES % 2);
            barrier_sync(TURN + wg, 128 * CONSUMERS);
            issue_qk<T, D>(s, q, ks + s1 * BN * D);
            issue_pv<T, D>(o, p, vs + s0 * BN * D);
            barrier_arrive(TURN + 1 - wg, 128 * CONSUMERS);
            wgmma_wait<1>();  // Q K^T has landed; P V may still be running
            fence_registers(s);
            done_with_k(t);
            softmax_tile<4>(s, m, l, alpha, row0, t * BN, n, causal, masked(t), scale_log2);
            wgmma_wait<0>();  // and now P V
            fence_registers(o);
            if (leader) mbar_arrive(&bar.v_empty[s0]);
            rescale(o, alpha);
            pack_p<T>(p, s);
        }

        // The last tile's P V, its values past row n - 1 zeroed first by both consumers, as in rung 6.
        const int last = tiles - 1, sl = (it + last) % STAGES;
        T* vt = vs + sl * BN * D;
        mbar_wait(&bar.v_full[sl], (it + last) / STAGES % 2);
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
        if (leader) mbar_arrive(&bar.v_empty[sl]);
        store_o<D>(O, o, l, head, row0, n);
        it += tiles;
    }
    if (wg == 0) barrier_sync(TURN, 128 * CONSUMERS);  // consumer 1's last hand-over of the turn
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention_persistent(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v, void* o, int n,
                     int d, int heads, float scale, int causal, int bf16)
{
    TYPE_DISPATCH(flash3_persistent, d, bf16, map_q, map_k, map_v, static_cast<T_*>(o), n, heads, scale, causal);
}
// --8<-- [end:kernel]
