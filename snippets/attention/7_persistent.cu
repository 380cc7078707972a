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
    if (threadIdx.x == 0) init_barriers<true>(bar);
    __syncthreads();

    if (warp >= 4 * CONSUMERS) {  // the producer: one thread issues every load
        registers_shrink<24>();
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_descriptor_acquire(map_q), tma_descriptor_acquire(map_k), tma_descriptor_acquire(map_v);
            int it = 0;  // tiles loaded so far
            for (int w = first_item(), round_q = 0; w < items; w = next_item(w), ++round_q) {
                int head, i0;
                work_item(w, blocks, n, causal, head, i0);
                if (round_q > 0) mbar_wait(&bar.q_empty, (round_q - 1) % 2);  // both consumers are done with Q
                load_item<D>(map_q, map_k, map_v, qs, ks, vs, bar, head, i0, tiles_from(i0), it);
                it += tiles_from(i0);
            }
        }
        return;
    }

    // A consumer: queries i0 + 64 wg to i0 + 64 wg + 63 of each item; its rows are row0 and row0 + 8.
    registers_grow<240>();
    const int wg = warp / 4;
    // The consumers take turns to issue across items too: consumer 0 first.
    if (wg == 1) barrier_arrive(TURN, 128 * CONSUMERS);
    int it = 0;  // the item's first tile, counted as the producer counts them
    for (int w = first_item(), round_q = 0; w < items; w = next_item(w), ++round_q) {
        int head, i0;
        work_item(w, blocks, n, causal, head, i0);
        const int tiles = tiles_from(i0), row0 = i0 + 64 * wg + 16 * (warp % 4) + lane / 4;
        float o[D / 2] = {}, l[2] = {0.0f, 0.0f};
        mbar_wait(&bar.q, round_q % 2);
        consume_item<T, D, 4, true>(o, l, qs + 64 * wg * 64, ks, vs, bar, it, tiles, i0, row0, n, causal,
                                    scale * LOG2E);
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
