// Rung 9, for long rows: a row too long for one block's registers is split across a cluster of
// 8 blocks (a Hopper thread-block cluster). Each block keeps its chunk in registers and reduces
// it; the 8 partial (max, sum) pairs are read straight out of each other's shared memory
// (distributed shared memory), so the row is still read once and written once. Its blocks
// read, reduce and write in step, so the memory idles while they reduce: the exps use the fast
// __expf (an exp2 in hardware, well inside the tolerance), and nothing waits on the cluster
// between the reduction and the writes.
// needs: sm_90 (thread-block clusters)
#include <cooperative_groups.h>

#include "cluster_reduce.cuh"
#include "row_registers.cuh"

namespace cg = cooperative_groups;

#define CLUSTER 8
#define VEC 8  // float4 loads per thread: 8 blocks x 512 threads x 32 floats = 131072 columns

// --8<-- [start:kernel]
// At most 512 threads, so that two blocks (of two clusters) fit on an SM and overlap.
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(512, 2)
softmax_cluster(const float* x, float* y, int rows, int cols)
{
    cg::cluster_group cluster = cg::this_cluster();
    int rank = cluster.block_rank();
    int row = blockIdx.x / CLUSTER;
    // Chunks are a multiple of 4 long, so each starts 16-byte aligned when the row does.
    int chunk = ((cols + CLUSTER - 1) / CLUSTER + 3) / 4 * 4;
    int begin = rank * chunk, end = min(cols, begin + chunk);
    const float* in = x + (size_t)row * cols;
    float* out = y + (size_t)row * cols;
    bool vector = cols % 4 == 0;

    float v[VEC][4];
    load_chunk(v, in, begin, end, vector);
    MaxSum total = cluster_reduce<CLUSTER>(chunk_stats(v, FastExp()));
    store_chunk(out, v, total, begin, end, vector, FastExp());
    cluster.sync();  // no block may exit while another may still read its shared memory
}
// --8<-- [end:kernel]
