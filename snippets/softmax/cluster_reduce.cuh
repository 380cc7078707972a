// Shared by rungs 9 and 10: the (max, sum) pair of a row spread over a thread-block cluster.
#pragma once
#include <cooperative_groups.h>

#include "reduce.cuh"

// --8<-- [start:cluster]
// Each block reduces its part of the row and leaves the pair in its shared memory; after a
// cluster barrier, every block merges all of them, read straight out of the others' shared
// memory (distributed shared memory). The caller syncs the cluster once more before it exits,
// so that no block's shared memory goes while another may still read it.
__device__ __forceinline__ MaxSum cluster_reduce(MaxSum v)
{
    __shared__ MaxSum block_stat;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    MaxSum s = block_reduce(v);
    if (threadIdx.x == 0) {
        block_stat = s;
    }
    cluster.sync();
    MaxSum total = {-INFINITY, 0.0f};
    for (unsigned r = 0; r < cluster.num_blocks(); r++) {
        total = merge(total, *cluster.map_shared_rank(&block_stat, r));
    }
    return total;
}
// --8<-- [end:cluster]
