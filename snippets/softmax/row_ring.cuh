// Shared by rungs 12 and 13: a persistent cluster's rows, drawn from a counter by its leader and
// pushed to every block, and each block's chunk of a row fetched by the TMA into a ring of slots.
// sm_90a only.
#pragma once
#include "bulk_copy.cuh"
#include "cluster_push.cuh"

// Block `rank`'s chunk of a row of `cols` floats, cols % 4 == 0, so that every chunk is whole,
// aligned float4s: float4s [begin, begin + n4) of the row, at most `stride` of them.
template <int Cluster>
__device__ __forceinline__ void chunk_of_row(int cols, unsigned rank, int& stride, int& begin, int& n4)
{
    stride = ((cols + Cluster - 1) / Cluster + 3) / 4;
    begin = min(cols / 4, (int)rank * stride);
    n4 = min(cols / 4, begin + stride) - begin;
}

// The cluster's j-th row: the leader pushes its ticket into every block's row_of[j % Ahead] and
// draws the next. Row j is drawn only if row j - 1 was a real one, so each cluster draws exactly
// one row past the last, and the last cluster to do so resets the counters for the next launch.
// The answer to the draw is used only at the next call, a round later, so no thread waits for it.
template <int Ahead, int Cluster>
__device__ __forceinline__ bool share_row(int j, unsigned& ticket, int rows, int* row_of, uint64_t* row_in,
                                          unsigned* next_row, unsigned* clusters_done)
{
    int row = ticket;
    if (row >= rows && atomicAdd(clusters_done, 1) == gridDim.x / Cluster - 1) {
        *next_row = 0;
        *clusters_done = 0;
    }
    for (int r = 0; r < Cluster; r++) push(&row_of[j % Ahead], &row_in[j % Ahead], r, row);
    if (row < rows) ticket = atomicAdd(next_row, 1);
    return row < rows;
}

// Thread 0's request to the TMA for this block's chunk (n4 float4s from float4 `begin` of the
// row) of the cluster's j-th row, into slot j % slots of `held`, once the row's number is in;
// it re-arms row_in for row j + Ahead. Whether row j is a real one.
template <int Ahead>
__device__ __forceinline__ bool fetch_row(int j, int slots, int rows, int cols, const float* x, float4* held,
                                          int stride, int begin, int n4, const int* row_of, uint64_t* row_in,
                                          uint64_t* landed)
{
    int a = j % Ahead, s = j % slots;
    mbar_wait(&row_in[a], (j / Ahead) & 1);
    int row = row_of[a];
    mbar_expect_bytes(&row_in[a], sizeof(int));  // for row j + Ahead
    if (row < rows) {
        mbar_expect_bytes(&landed[s], 16 * n4);
        if (n4 > 0) bulk_load(held + s * stride, x + (size_t)row * cols + 4 * begin, 16 * n4, &landed[s]);
    }
    return row < rows;
}

// Thread 0's set-up of a block's mbarriers, before the cluster barrier that lets others push to
// them: row_in[a] each expects one row number, landed[s] is armed by each fetch, and stats_in[b]
// each expects every block's (max, sum) pair.
template <int Ahead, int Slots, int Cluster>
__device__ __forceinline__ void init_ring(uint64_t* row_in, uint64_t* landed, uint64_t* stats_in)
{
    for (int a = 0; a < Ahead; a++) mbar_init(&row_in[a], 1);
    for (int s = 0; s < Slots; s++) mbar_init(&landed[s], 1);
    for (int b = 0; b < 2; b++) mbar_init(&stats_in[b], 1);
    mbar_init_fence();
    for (int a = 0; a < Ahead; a++) mbar_expect_bytes(&row_in[a], sizeof(int));
    for (int b = 0; b < 2; b++) mbar_expect_bytes(&stats_in[b], sizeof(MaxSum) * Cluster);
}

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
