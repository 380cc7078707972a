// Rung 13, for the longest rows: rung 12's persistent clusters of 8, with the output written
// straight from registers. Rung 12 wrote each scaled chunk back into its slot of shared memory
// for the TMA to store, so a slot stayed busy until the TMA had read it out, and only two rows
// were ever on their way in. Here a slot is free as soon as every thread has its float4s in
// registers: the TMA refills it at once with the row that many rounds ahead, and the threads
// write the row out themselves, 16 bytes at a time, while it lands. A block holds as many slots
// as its shared memory takes, up to four: four rows in flight on rows of up to 65536 floats,
// three at 131072, and at 262144 one slot, the row being reduced held in registers beside it.
// Sixteen float4s a thread fit beside the pipeline's bookkeeping only without a branch around
// the exps (see below): with one, ptxas spilled held values to local memory on every row.
// needs: sm_90a (thread-block clusters, st.async and the TMA's bulk copies)
#include <cooperative_groups.h>

#include "row_ring.cuh"  // share_row and fetch_row, with the TMA's bulk copies and st.async
#include "reduce.cuh"  // MaxSum, and block_pair: a block's pair past one barrier

namespace cg = cooperative_groups;

#define CLUSTER 8
#define THREADS 512  // up to 128 registers a thread: 1024 threads would have 64, and spill
#define VEC 16       // float4s a thread holds: chunks of up to 512 * 16 * 4 floats, an eighth of 262144
#define MAX_SLOTS 4  // chunks of shared memory a block cycles through, as many as fit up to this
#define AHEAD (MAX_SLOTS + 2)  // rows a block is told of: those in flight, the one reduced, the next

__device__ unsigned int next_row;       // rows drawn so far in this launch
__device__ unsigned int clusters_done;  // clusters that have drawn a row past the last

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
softmax_prefetch_ring(const float* x, float* y, int rows, int cols, int slots)
{
    extern __shared__ float4 held[];  // `slots` chunks of `stride` float4s
    __shared__ uint64_t row_in[AHEAD], landed[MAX_SLOTS], stats_in[2];
    __shared__ int row_of[AHEAD];
    __shared__ __align__(8) MaxSum stats[2][CLUSTER];
    unsigned rank = cg::this_cluster().block_rank();
    int stride, begin, n4;  // the host sees to it that cols % 4 == 0
    chunk_of_row<CLUSTER>(cols, rank, stride, begin, n4);
    bool leader = rank == 0 && threadIdx.x == 0;

    if (threadIdx.x == 0) init_ring<AHEAD, MAX_SLOTS, CLUSTER>(row_in, landed, stats_in);
    cg::this_cluster().sync();  // every block's mbarriers are ready before anyone pushes to them

    // Rows are drawn and fetched as in rung 12 (row_ring.cuh).
    unsigned ticket = leader ? atomicAdd(&next_row, 1) : 0;
    auto share = [&](int j) {
        return share_row<AHEAD, CLUSTER>(j, ticket, rows, row_of, row_in, &next_row, &clusters_done);
    };
    auto fetch = [&](int j) {
        return fetch_row<AHEAD>(j, slots, rows, cols, x, held, stride, begin, n4, row_of, row_in, landed);
    };
    bool drawing = leader;  // the last row the leader shared was a real one
    for (int j = 0; j <= slots && drawing; j++) drawing = share(j);
    // Thread 0 fetches the rows in order, each only if the one before it was a real one. The
    // first is fetched alone, so that it lands first; the other slots fill once it has.
    bool fetching = threadIdx.x == 0 && fetch(0);  // the last row fetched was a real one

    for (int k = 0;; k++) {
        int s = k % slots, b = k % 2;
        float4* chunk = held + s * stride;
        mbar_wait(&row_in[k % AHEAD], (k / AHEAD) & 1);
        int row = row_of[k % AHEAD];
        if (row >= rows) break;
        mbar_wait(&landed[s], (k / slots) & 1);
        if (k == 0)
            for (int j = 1; j < slots && fetching; j++) fetching = fetch(j);

        // This thread's float4s into registers: their max, then their exps against it.
        float4 v[VEC];
        float m = load_held<VEC, THREADS>(v, chunk, n4), d = 0.0f;
        // Where every value was -inf, shift by 0: exp(-inf) = 0, and the sum stays 0. One path,
        // not a branch whose two sides would each keep the sixteen float4s. The float4s past the
        // chunk's end in every thread (a short row's) take no exp: the test is the same for the
        // whole block.
        float shift = m == -INFINITY ? 0.0f : m;
#pragma unroll
        for (int u = 0; u < VEC; u++) {
            if (u * THREADS < n4) {
                v[u] = make_float4(__expf(v[u].x - shift), __expf(v[u].y - shift), __expf(v[u].z - shift),
                                   __expf(v[u].w - shift));
                d += v[u].x + v[u].y + v[u].z + v[u].w;
            }
        }
        MaxSum mine = block_pair({m, d});  // its barrier: every thread has read the slot

        // The slot is free: it takes the row `slots` rounds ahead, before this block's pair goes
        // out, so that once the leader has every block's pair of this row, each block is done
        // with the rows that the leader's next pushes overwrite. The leader shares the row after.
        if (fetching) fetching = fetch(k + slots);
        if (threadIdx.x < CLUSTER) push(&stats[b][rank], &stats_in[b], threadIdx.x, mine);
        if (leader && drawing) drawing = share(k + slots + 1);

        mbar_wait(&stats_in[b], (k / 2) & 1);
        // Lane r of every warp takes block r's pair, and the warp merges them: two registers a
        // thread, not the sixteen of reading all eight pairs, beside the 64 that hold the chunk.
        int lane = threadIdx.x % 32;
        MaxSum total = warp_pair(lane < CLUSTER ? stats[b][lane] : MaxSum{-INFINITY, 0.0f});
        if (threadIdx.x == 0) mbar_expect_bytes(&stats_in[b], sizeof(MaxSum) * CLUSTER);  // for row k + 2
        __syncthreads();  // block_pair's partials are read before the next round writes them

        // exp(x - M) / D = exp(x - m) * exp(m - M) / D, straight from registers to the output.
        float scale = __expf(m - total.m) / total.d;
        float4* out = reinterpret_cast<float4*>(y + (size_t)row * cols) + begin;
#pragma unroll
        for (int u = 0; u < VEC; u++) {
            int i = threadIdx.x + u * THREADS;
            if (i < n4) out[i] = make_float4(v[u].x * scale, v[u].y * scale, v[u].z * scale, v[u].w * scale);
        }
    }
}
// --8<-- [end:kernel]
