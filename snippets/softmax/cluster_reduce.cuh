// Shared by rungs 9 and 10: the (max, sum) pair of a row spread over a thread-block cluster.
#pragma once
#include <cooperative_groups.h>

#include "reduce.cuh"

// --8<-- [start:cluster]
// Each block reduces its part of the row and leaves the pair in its shared memory; after a
// cluster barrier, every block reads all Blocks pairs at once, straight out of the others'
// shared memory (distributed shared memory), and merges them. The caller syncs the cluster
// once more before it exits, so that no block's shared memory goes while another may read it.
template <int Blocks>
__device__ __forceinline__ MaxSum cluster_reduce(MaxSum v)
{
    __shared__ MaxSum block_stat;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    MaxSum s = block_reduce(v);
    if (threadIdx.x == 0) {
        block_stat = s;
    }
    cluster.sync();
    MaxSum part[Blocks];
#pragma unroll
    for (int r = 0; r < Blocks; r++) {
        part[r] = *cluster.map_shared_rank(&block_stat, r);  // all in flight together
    }
    MaxSum total = {-INFINITY, 0.0f};
#pragma unroll
    for (int r = 0; r < Blocks; r++) {
        total = merge(total, part[r]);
    }
    return total;
}
// --8<-- [end:cluster]
