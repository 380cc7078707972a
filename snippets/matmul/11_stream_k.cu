// Rung 11: stream-K. Rung 10 launches a block per tile of C, one block per SM: at 4096^3 that
// is 512 tiles for 132 SMs, four waves whose last keeps 116 SMs busy and 16 idle. Here the grid
// is one block per SM. The tiles that fill whole waves are done whole, a wave at a time, in
// rung 10's order; the rest are cut along K instead: their steps along K (16 columns of A each)
// are laid end to end, tile after tile, and each block takes an equal run of them. A run
// starts and ends inside tiles: the partial sums of such a split tile go to a workspace, and
// the block that finishes the tile last adds the others' to its own and writes C. Same block
// tile and ring as rung 10 (ring_tile.cuh).
// Needs M a multiple of 128, N of 256 and K of 16.
// needs: sm_80 (cp.async copies)
#include "ring_tile.cuh"

// A block's partial sums, in the order its threads hold them: float4 e of thread t at [e][t],
// so that the 256 threads write (and later read) 4 KiB in one piece per e.
constexpr int SLOT_FLOAT4S = BM * BN / 4;

// The runs: block b takes steps [first(b), first(b + 1)) of the split tiles' `steps`. There are
// never more runs than steps, so none is empty and the blocks from block_of(a tile's first
// step) to block_of(its last) all hold part of it: that count is how many the last one awaits.
struct Runs {
    long long steps;
    int blocks;
    __device__ long long first(int b) const { return steps * b / blocks; }
    __device__ int block_of(long long step) const { return (int)(((step + 1) * blocks - 1) / steps); }
    // Block b's slot for split tile `tile` (counted from the first split one): 0 for the tile
    // its run starts in, 1 for the one it ends in.
    __device__ int slot(int b, int tile, int per_tile) const { return 2 * b + (tile == first(b) / per_tile ? 0 : 1); }
};

// --8<-- [start:kernel]
extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_stream_k(const float* A, const float* B, float* C, int M, int N, int K, float4* partials, int* arrived)
{
    extern __shared__ __align__(16) unsigned char shared[];
    Stage* stages = reinterpret_cast<Stage*>(shared);
    __shared__ bool last;
    const int t = threadIdx.x, r0 = row0(t), c0 = col0(t), blocks = gridDim.x, k_tiles = K / BK;
    const int tiles_n = N / BN, tiles = M / BM * tiles_n, whole = tiles - tiles % blocks;
    const int per_tile = max(k_tiles, 1);  // K = 0: one empty step per tile, which writes its zeros
    const long long steps = (long long)(tiles - whole) * per_tile;
    const Runs runs{steps, (int)max(1LL, min((long long)blocks, steps))};
    const bool runs_here = blockIdx.x < runs.blocks && steps > 0;
    long long step = runs_here ? runs.first(blockIdx.x) : 0;
    const long long end = runs_here ? runs.first(blockIdx.x + 1) : 0;

    for (int next = blockIdx.x;;) {
        // The next piece of work: a whole tile while they last, then this block's run.
        int tile, k0 = 0, k1 = per_tile;
        if (next < whole) {
            tile = next;
            next += blocks;
        } else if (step < end) {
            tile = whole + (int)(step / per_tile), k0 = (int)(step % per_tile);
            k1 = (int)min((long long)per_tile, k0 + (end - step));
            step += k1 - k0;
        } else {
            break;
        }
        const size_t row = (size_t)(tile / tiles_n) * BM, col = (size_t)(tile % tiles_n) * BN;
        const float* a_rows = A + row * K;
        const float* b_cols = B + col;
        const int k_end = min(k1, k_tiles);
        float acc[TM][TN] = {{0.0f}};

        // Rung 10's ring, from step k0. Written out here, not shared: moved into a helper, rung
        // 10's own loop compiled to another instruction order (the page tells the story).
        for (int s = 0; s < STAGES - 1; ++s) {
            if (k0 + s < k_end) load_tile(stages[(k0 + s) % STAGES], a_rows, b_cols, N, K, k0 + s);
            cp_async_commit();  // a group per tile, empty or not: the wait below counts groups
        }
        for (int kt = k0; kt < k_end; ++kt) {
            cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed...
            __syncthreads();              // ...and everyone's; and tile kt-1's stage is free
            const int fill = kt + STAGES - 1;
            if (fill < k_end) load_tile(stages[fill % STAGES], a_rows, b_cols, N, K, fill);
            cp_async_commit();
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                float a[TM], b[TN];
                fragments(a, b, stages[kt % STAGES], k, r0, c0);
                multiply(acc, a, b);
            }
        }
        __syncthreads();  // every thread is done with the ring before the next piece fills it

        if (k0 > 0 || k1 < per_tile) {
            // A split tile: leave this block's sums in its slot and count them in; the last
            // block to arrive adds the others' slots to its sums and writes C.
            const int split = tile - whole;
            float4* mine = partials + (size_t)runs.slot(blockIdx.x, split, per_tile) * SLOT_FLOAT4S;
#pragma unroll
            for (int e = 0; e < TM * TN / 4; ++e)
                mine[e * THREADS + t] = *reinterpret_cast<float4*>(&acc[e / 2][4 * (e % 2)]);
            __threadfence();  // the sums are visible to every block before the count says so
            __syncthreads();
            const int from = runs.block_of((long long)split * per_tile);
            const int to = runs.block_of((long long)(split + 1) * per_tile - 1);
            if (t == 0) {
                last = atomicAdd(&arrived[tile], 1) == to - from;
                if (last) arrived[tile] = 0;  // ready for the next launch
            }
            __syncthreads();
            if (!last) continue;
            __threadfence();
            for (int b = from; b <= to; ++b) {
                if (b == blockIdx.x) continue;
                const float4* theirs = partials + (size_t)runs.slot(b, split, per_tile) * SLOT_FLOAT4S;
#pragma unroll
                for (int e = 0; e < TM * TN / 4; ++e) {
                    const float4 p = __ldcg(&theirs[e * THREADS + t]);  // from L2, never a stale L1 line
                    float* sum = &acc[e / 2][4 * (e % 2)];
                    sum[0] += p.x, sum[1] += p.y, sum[2] += p.z, sum[3] += p.w;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            float* out = C + (row + r0 + i % 4 + 16 * (i / 4)) * N + col + c0;
#pragma unroll
            for (int j = 0; j < 2; ++j)
                *reinterpret_cast<float4*>(out + 32 * j) =
                    make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
        }
    }
}
// --8<-- [end:kernel]
