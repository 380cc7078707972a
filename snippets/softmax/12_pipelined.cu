// Rung 12, for the longest rows: rung 10's cluster of 8 blocks, each holding an eighth of the row
// in shared memory, made persistent and pipelined. Rungs 9 to 11 give each row its own blocks,
// which read the whole row before they write any of it; a wave of them starts together, so the
// memory first mostly reads, then mostly writes, and the last wave leaves SMs idle. Here a
// cluster stays on its 8 SMs and takes one row after another from a counter. Each block holds
// three rows' chunks: while it reduces one, the TMA writes the row before it out and brings the
// rows after it in, so that reads and writes overlap all through the run.
// needs: sm_90a (thread-block clusters, st.async and the TMA's bulk copies)
#include "row_ring.cuh"  // the rows' counter, the TMA's fetches, the pushed pairs

#define CLUSTER 8
#define THREADS 1024
#define VEC 4    // float4s a thread holds: chunks of up to 1024 * 4 * 4 floats, an eighth of 131072
#define SLOTS 3  // chunks a block holds: the row being reduced, and the rows before and after it
#define AHEAD 4  // rows a block is told of ahead of need: pushed one round before they are fetched

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
softmax_pipelined(const float* x, float* y, int rows, int cols)
{
    extern __shared__ float4 held[];  // SLOTS chunks of a row
    __shared__ RowRing<CLUSTER, AHEAD, SLOTS> ring;
    RowPipeline p(ring, held, x, rows, cols, SLOTS);  // the host sees to it that cols % 4 == 0

    // The cluster's j-th row is drawn by the leader and pushed to every block, whose thread 0
    // then asks the TMA for its chunk (row_ring.cuh).
    for (int j = 0; j < AHEAD; j++) p.share(j);
    // The cluster's first row is fetched alone (its second only once the first has landed): with
    // the memory's bandwidth to itself, it lands sooner, and the first writes start sooner.
    p.fetch(0);

    for (int k = 0;; k++) {
        int row = p.row(k);
        if (row >= rows) break;
        p.wait_landed(k);
        if (k == 0) p.fetch(1);

        // This thread's float4s into registers: their max, then their exps against it.
        float4 v[VEC];
        float m = load_held<VEC, THREADS>(v, p.slot(k), p.n4);
        float d = exps_held<VEC, THREADS>(v, m, p.n4);
        p.push_pair(k, block_pair({m, d}));

        // While the other blocks' pairs come in: once the TMA has read row k - 1 out of its slot,
        // the slot takes row k + 2 (if row k + 1 is a real one), and the leader shares row k + 3.
        if (threadIdx.x == 0 && p.fetching) {
            if (k >= 1) p.share(k + 3);
            bulk_read_wait<0>();
            p.fetch(k + 2);
        }
        store_scaled<VEC, THREADS>(p.slot(k), v, m, p.total(k), p.n4);  // into the slot, and the TMA writes it out
        fence_proxy_async();
        __syncthreads();
        if (threadIdx.x == 0 && p.n4 > 0) bulk_store(y + (size_t)row * cols + 4 * p.begin, p.slot(k), 16 * p.n4);
    }
    if (threadIdx.x == 0) bulk_read_wait<0>();  // no block exits before the TMA has read its last row
}
// --8<-- [end:kernel]
