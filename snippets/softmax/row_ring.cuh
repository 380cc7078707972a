// Shared by rungs 12 and 13: persistent clusters that take rows one after another. A cluster's
// leader draws its rows from a counter and pushes each row's number into every block; each
// block's chunk of a row is fetched by the TMA into a ring of slots in shared memory; and each
// block pushes its (max, sum) pair of a row into every block of the cluster. sm_90a only.
#pragma once
#include <cooperative_groups.h>

#include "bulk_copy.cuh"
#include "cluster_push.cuh"
#include "reduce.cuh"  // MaxSum, warp_pair

__device__ unsigned int next_row;       // rows drawn so far in this launch
__device__ unsigned int clusters_done;  // clusters that have drawn a row past the last

// The counter's value before this thread adds 1 to it, with the answer waited for only where
// it is used. atomicAdd from one thread of a warp, as ptxas compiles it, is a warp-wide add
// whose answer is shuffled to the lanes at once, so the thread would wait for the round trip
// right there, every round. An increment that wraps to 0 at `limit` is left alone: a limit
// the counter never reaches makes it an add of 1.
__device__ __forceinline__ unsigned draw(unsigned* counter, unsigned limit)
{
    unsigned v;
    asm volatile("atom.global.inc.u32 %0, [%1], %2;\n" : "=r"(v) : "l"(counter), "r"(limit) : "memory");
    return v;
}

// What a block's shared memory holds for the pipeline, besides the slots: row_in[a] expects
// one row number (into row_of[a]), landed[s] the block's chunk of a row in slot s, and
// pairs_in[p] every block's (max, sum) pair of a row (into pairs[p]), for rows in turn: a
// block reads a row's pairs before it pushes the next row's, so no block can push a row's pair
// before every block has read those of the row two before.
template <int Cluster, int Ahead, int MaxSlots>
struct RowRing {
    static constexpr int Pairs = 2;
    uint64_t row_in[Ahead], landed[MaxSlots], pairs_in[Pairs];
    int row_of[Ahead];
    alignas(8) MaxSum pairs[Pairs][Cluster];  // st.async writes a pair as 8 bytes
};

// Block `rank`'s chunk of a row of `cols` floats, cols % 4 == 0, so that every chunk is whole,
// aligned float4s: float4s [begin, begin + n4) of the row, at most `stride` of them.
template <int Cluster>
__device__ __forceinline__ void chunk_of_row(int cols, unsigned rank, int& stride, int& begin, int& n4)
{
    stride = ((cols + Cluster - 1) / Cluster + 3) / 4;
    begin = min(cols / 4, (int)rank * stride);
    n4 = min(cols / 4, begin + stride) - begin;
}

// A thread's view of the pipeline: its block's chunk and the calls that move rows along. The
// cluster's j-th row takes row_in[j % Ahead] and slot j % slots, and its pairs pairs[j % 2].
template <int Cluster, int Ahead, int MaxSlots>
struct RowPipeline {
    static constexpr int Pairs = RowRing<Cluster, Ahead, MaxSlots>::Pairs;
    RowRing<Cluster, Ahead, MaxSlots>& ring;
    float4* held;  // `slots` chunks of `stride` float4s
    const float* x;
    int rows, cols, slots, stride, begin, n4;
    unsigned rank, ticket;  // ticket: the leader's last draw, shared at its next call to share
    bool leader, drawing, fetching;  // drawing, fetching: the last row shared, fetched was a real one

    // Thread 0 sets up its block's mbarriers, and a cluster barrier sees every block's ready
    // before anyone pushes to them; then the leader draws its first row.
    __device__ __forceinline__ RowPipeline(RowRing<Cluster, Ahead, MaxSlots>& ring, float4* held,
                                           const float* x, int rows, int cols, int slots)
        : ring(ring), held(held), x(x), rows(rows), cols(cols), slots(slots)
    {
        rank = cooperative_groups::this_cluster().block_rank();
        chunk_of_row<Cluster>(cols, rank, stride, begin, n4);
        leader = drawing = rank == 0 && threadIdx.x == 0;
        fetching = threadIdx.x == 0;
        if (threadIdx.x == 0) {
            for (int a = 0; a < Ahead; a++) mbar_init(&ring.row_in[a], 1);
            for (int s = 0; s < MaxSlots; s++) mbar_init(&ring.landed[s], 1);
            for (int p = 0; p < Pairs; p++) mbar_init(&ring.pairs_in[p], 1);
            mbar_init_fence();
            for (int a = 0; a < Ahead; a++) mbar_expect_bytes(&ring.row_in[a], sizeof(int));
            for (int p = 0; p < Pairs; p++) mbar_expect_bytes(&ring.pairs_in[p], sizeof(MaxSum) * Cluster);
        }
        cooperative_groups::this_cluster().sync();
        ticket = leader ? draw(&next_row, never()) : 0;
    }

    // The leader's: its ticket pushed into every block as the cluster's j-th row, and the next
    // drawn. Rows are drawn while the last was a real one, so each cluster draws exactly one
    // row past the last, and the last cluster to do so resets the counters for the next launch.
    // The answer to a draw is used only at the next call, a round later: no thread waits for it.
    __device__ __forceinline__ void share(int j)
    {
        if (!drawing) return;
        int row = ticket;
        if (row >= rows && atomicAdd(&clusters_done, 1) == gridDim.x / Cluster - 1) {
            next_row = 0;
            clusters_done = 0;
        }
        for (int r = 0; r < Cluster; r++) push(&ring.row_of[j % Ahead], &ring.row_in[j % Ahead], r, row);
        if (row < rows) ticket = draw(&next_row, never());
        drawing = row < rows;
    }

    // Thread 0's: once the j-th row's number is in, the TMA asked for this block's chunk of it,
    // into slot j % slots; row_in is re-armed for row j + Ahead. Rows are fetched while the last
    // was a real one.
    __device__ __forceinline__ void fetch(int j)
    {
        if (!fetching) return;
        int a = j % Ahead, s = j % slots;
        mbar_wait(&ring.row_in[a], (j / Ahead) & 1);
        int row = ring.row_of[a];
        mbar_expect_bytes(&ring.row_in[a], sizeof(int));  // for row j + Ahead
        if (row < rows) {
            mbar_expect_bytes(&ring.landed[s], 16 * n4);
            if (n4 > 0) bulk_load(slot(j), x + (size_t)row * cols + 4 * begin, 16 * n4, &ring.landed[s]);
        }
        fetching = row < rows;
    }

    // More than the counter ever reaches: each cluster draws one row past the last.
    __device__ __forceinline__ unsigned never() const { return rows + gridDim.x; }

    __device__ __forceinline__ float4* slot(int j) const { return held + j % slots * stride; }

    // The cluster's j-th row, once its number is in (past the last row: `rows` or more).
    __device__ __forceinline__ int row(int j)
    {
        mbar_wait(&ring.row_in[j % Ahead], (j / Ahead) & 1);
        return ring.row_of[j % Ahead];
    }

    __device__ __forceinline__ void wait_landed(int j) { mbar_wait(&ring.landed[j % slots], (j / slots) & 1); }

    // This block's pair of row j, pushed into every block of the cluster by threads 0 to Cluster - 1.
    __device__ __forceinline__ void push_pair(int j, MaxSum mine)
    {
        if (threadIdx.x < Cluster) push(&ring.pairs[j % Pairs][rank], &ring.pairs_in[j % Pairs], threadIdx.x, mine);
    }

    // Row j's (max, sum) over the cluster, once every block's pair is in: lane r of each warp
    // takes block r's, and the warp merges them (two registers a thread, not the sixteen of
    // reading all eight pairs). pairs_in is re-armed for row j + Pairs.
    __device__ __forceinline__ MaxSum total(int j)
    {
        int p = j % Pairs, lane = threadIdx.x % 32;
        mbar_wait(&ring.pairs_in[p], (j / Pairs) & 1);
        MaxSum t = warp_pair(lane < Cluster ? ring.pairs[p][lane] : MaxSum{-INFINITY, 0.0f});
        if (threadIdx.x == 0) mbar_expect_bytes(&ring.pairs_in[p], sizeof(MaxSum) * Cluster);
        return t;
    }
};

// This thread's float4s of a chunk of n4 into registers, -inf past the chunk's end, and their
// maximum. Thread i holds float4s i, i + Threads, i + 2 * Threads, ...
template <int Vec, int Threads>
__device__ __forceinline__ float load_held(float4 (&v)[Vec], const float4* chunk, int n4)
{
    float m = -INFINITY;
#pragma unroll
    for (int u = 0; u < Vec; u++) {
        int i = threadIdx.x + u * Threads;
        v[u] = i < n4 ? chunk[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
    }
    return m;
}

// exp(x - m) for this thread's float4s, in place, and their sum. Where every value was -inf
// (m = -inf), the shift is 0: exp(-inf) = 0, and the sum stays 0, on one path, not a branch
// whose two sides would each keep the float4s. The float4s past the chunk's end in every thread
// (a short row's) take no exp: the test is the same for the whole block.
template <int Vec, int Threads>
__device__ __forceinline__ float exps_held(float4 (&v)[Vec], float m, int n4)
{
    float shift = m == -INFINITY ? 0.0f : m, d = 0.0f;
#pragma unroll
    for (int u = 0; u < Vec; u++) {
        if (u * Threads < n4) {
            v[u] = make_float4(__expf(v[u].x - shift), __expf(v[u].y - shift), __expf(v[u].z - shift),
                               __expf(v[u].w - shift));
            d += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    }
    return d;
}

// exp(x - M) / D = exp(x - m) * exp(m - M) / D: this thread's float4s scaled by the row's
// total, into `out` (a slot, or the output row).
template <int Vec, int Threads>
__device__ __forceinline__ void store_scaled(float4* out, const float4 (&v)[Vec], float m, MaxSum total, int n4)
{
    float scale = __expf(m - total.m) / total.d;
#pragma unroll
    for (int u = 0; u < Vec; u++) {
        int i = threadIdx.x + u * Threads;
        if (i < n4) out[i] = make_float4(v[u].x * scale, v[u].y * scale, v[u].z * scale, v[u].w * scale);
    }
}
