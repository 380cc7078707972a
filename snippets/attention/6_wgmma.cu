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
    if (threadIdx.x == 0) init_barriers<false>(bar);
    __syncthreads();

    if (warp >= 4 * CONSUMERS) {  // the producer: one thread issues every load
        registers_shrink<24>();
        if (warp == 4 * CONSUMERS && lane == 0) {
            tma_descriptor_acquire(map_q), tma_descriptor_acquire(map_k), tma_descriptor_acquire(map_v);
            load_item<D>(map_q, map_k, map_v, qs, ks, vs, bar, head, i0, tiles, 0);
        }
        return;
    }

    // A consumer: queries i0 + 64 wg to i0 + 64 wg + 63; this thread's rows are row0 and row0 + 8.
    registers_grow<240>();
    const int wg = warp / 4;
    const int row0 = i0 + 64 * wg + 16 * (warp % 4) + lane / 4;
    float o[D / 2] = {}, l[2] = {0.0f, 0.0f};
    if (wg == 1) barrier_arrive(TURN, 128 * CONSUMERS);  // consumer 0 issues first
    mbar_wait(&bar.q, 0);
    consume_item<T, D, 1, false>(o, l, qs + 64 * wg * 64, ks, vs, bar, 0, tiles, i0, row0, n, causal, scale * LOG2E);
    store_o<D>(O, o, l, head, row0, n);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention_wgmma(const CUtensorMap* map_q, const CUtensorMap* map_k, const CUtensorMap* map_v, float* o, int n, int d,
                float scale, int causal, int bf16)
{
    TYPE_DISPATCH(flash3, d, bf16, map_q, map_k, map_v, o, n, scale, causal);
}
// --8<-- [end:kernel]
