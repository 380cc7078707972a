// Rung 12, for the longest rows: rung 10's cluster of 8 blocks, each holding an eighth of the row
// in shared memory, made persistent and pipelined. Rungs 9 to 11 give each row its own blocks,
// which read the whole row before they write any of it; a wave of them starts together, so the
// memory first mostly reads, then mostly writes, and the last wave leaves SMs idle. Here a
// cluster stays on its 8 SMs and takes one row after another from a counter. Each block holds
// three rows' chunks: while it reduces one, the TMA writes the row before it out and brings the
// rows after it in, so that reads and writes overlap all through the run.
// needs: sm_90a (thread-block clusters, st.async and the TMA's bulk copies)
#include <cooperative_groups.h>

#include "row_ring.cuh"  // share_row and fetch_row, with the TMA's bulk copies and st.async
#include "reduce.cuh"  // MaxSum, and block_pair: a block's pair past one barrier

namespace cg = cooperative_groups;

#define CLUSTER 8
#define THREADS 1024
#define VEC 4    // float4s a thread holds: chunks of up to 1024 * 4 * 4 floats, an eighth of 131072
#define SLOTS 3  // chunks a block holds: the row being reduced, and the rows before and after it
#define AHEAD 4  // rows a block is told of ahead of need: pushed one round before they are fetched

__device__ unsigned int next_row;       // rows drawn so far in this launch
__device__ unsigned int clusters_done;  // clusters that have drawn a row past the last

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
softmax_pipelined(const float* x, float* y, int rows, int cols)
{
    extern __shared__ float4 held[];  // SLOTS chunks of `stride` float4s
    __shared__ uint64_t row_in[AHEAD], landed[SLOTS], stats_in[2];
    __shared__ int row_of[AHEAD];
    __shared__ __align__(8) MaxSum stats[2][CLUSTER];
    unsigned rank = cg::this_cluster().block_rank();
    int stride, begin, n4;  // the host sees to it that cols % 4 == 0
    chunk_of_row<CLUSTER>(cols, rank, stride, begin, n4);
    bool leader = rank == 0 && threadIdx.x == 0;

    if (threadIdx.x == 0) init_ring<AHEAD, SLOTS, CLUSTER>(row_in, landed, stats_in);
    cg::this_cluster().sync();  // every block's mbarriers are ready before anyone pushes to them

    // The cluster's j-th row is drawn by the leader and pushed to every block, whose thread 0
    // then asks the TMA for its chunk (row_ring.cuh).
    unsigned ticket = leader ? atomicAdd(&next_row, 1) : 0;
    auto share = [&](int j) {
        return share_row<AHEAD, CLUSTER>(j, ticket, rows, row_of, row_in, &next_row, &clusters_done);
    };
    auto fetch = [&](int j) {
        return fetch_row<AHEAD>(j, SLOTS, rows, cols, x, held, stride, begin, n4, row_of, row_in, landed);
    };
    bool drawing = leader;  // the last row the leader shared was a real one
    for (int j = 0; j < AHEAD && drawing; j++) drawing = share(j);
    // The cluster's first row is fetched alone (its second only once the first has landed): with
    // the memory's bandwidth to itself, it lands sooner, and the first writes start sooner.
    if (threadIdx.x == 0) fetch(0);

    for (int k = 0;; k++) {
        int s = k % SLOTS, b = k % 2;
        float4* chunk = held + s * stride;
        mbar_wait(&row_in[k % AHEAD], (k / AHEAD) & 1);
        int row = row_of[k % AHEAD];
        if (row >= rows) break;
        mbar_wait(&landed[s], (k / SLOTS) & 1);
        if (k == 0 && threadIdx.x == 0) fetch(1);

        // This thread's float4s into registers: their max, then their exps against it.
        float4 v[VEC];
        float m = load_held<VEC, THREADS>(v, chunk, n4), d = 0.0f;
#pragma unroll
        for (int u = 0; u < VEC; u++) {
            v[u] = m == -INFINITY ? make_float4(0, 0, 0, 0)
                                  : make_float4(__expf(v[u].x - m), __expf(v[u].y - m), __expf(v[u].z - m),
                                                __expf(v[u].w - m));
            d += v[u].x + v[u].y + v[u].z + v[u].w;
        }
        MaxSum mine = block_pair({m, d});
        if (threadIdx.x < CLUSTER) push(&stats[b][rank], &stats_in[b], threadIdx.x, mine);

        // While the other blocks' pairs come in: once the TMA has read row k - 1 out of its slot,
        // the slot takes row k + 2 (if row k + 1 is a real one), and the leader shares row k + 3.
        if (threadIdx.x == 0 && row_of[(k + 1) % AHEAD] < rows) {
            if (k >= 1 && drawing) drawing = share(k + 3);
            bulk_read_wait<0>();
            fetch(k + 2);
        }
        mbar_wait(&stats_in[b], (k / 2) & 1);
        MaxSum total = {-INFINITY, 0.0f};
#pragma unroll
        for (int r = 0; r < CLUSTER; r++) total.m = fmaxf(total.m, stats[b][r].m);
#pragma unroll
        for (int r = 0; r < CLUSTER; r++)
            total.d += total.m == -INFINITY ? 0.0f : stats[b][r].d * __expf(stats[b][r].m - total.m);
        if (threadIdx.x == 0) mbar_expect_bytes(&stats_in[b], sizeof(MaxSum) * CLUSTER);  // for row k + 2

        // exp(x - M) / D = exp(x - m) * exp(m - M) / D, into the slot, and the TMA writes it out.
        float scale = __expf(m - total.m) / total.d;
#pragma unroll
        for (int u = 0; u < VEC; u++) {
            int i = threadIdx.x + u * THREADS;
            if (i < n4) chunk[i] = make_float4(v[u].x * scale, v[u].y * scale, v[u].z * scale, v[u].w * scale);
        }
        fence_proxy_async();
        __syncthreads();
        if (threadIdx.x == 0 && n4 > 0) bulk_store(y + (size_t)row * cols + 4 * begin, chunk, 16 * n4);
    }
    if (threadIdx.x == 0) bulk_read_wait<0>();  // no block exits before the TMA has read its last row
}
// --8<-- [end:kernel]
