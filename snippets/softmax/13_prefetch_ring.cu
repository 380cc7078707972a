// Rung 13, for the longest rows: rung 12's persistent clusters of 8, with the output written
// straight from registers. Rung 12 wrote each scaled chunk back into its slot of shared memory
// for the TMA to store, so a slot stayed busy until the TMA had read it out, and only two rows
// were ever on their way in. Here a slot is free as soon as every thread has its float4s in
// registers: the TMA refills it at once with the row that many rounds ahead, and the threads
// write the row out themselves, 16 bytes at a time, while it lands. A block holds as many slots
// as its shared memory takes, up to four: four rows in flight on rows of up to 65536 floats,
// three at 131072, and at 262144 one slot, the row being reduced held in registers beside it.
// Sixteen float4s a thread fit beside the pipeline's bookkeeping only without a branch around
// the exps (exps_held, row_ring.cuh): with one, ptxas spilled held values to local memory on
// every row.
// needs: sm_90a (thread-block clusters, st.async and the TMA's bulk copies)
#include "row_ring.cuh"  // the rows' counter, the TMA's fetches, the pushed pairs

#define CLUSTER 8
#define THREADS 512  // up to 128 registers a thread: 1024 threads would have 64, and spill
#define VEC 16       // float4s a thread holds: chunks of up to 512 * 16 * 4 floats, an eighth of 262144
#define MAX_SLOTS 4  // chunks of shared memory a block cycles through, as many as fit up to this
#define AHEAD (MAX_SLOTS + 2)  // rows a block is told of: those in flight, the one reduced, the next

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
softmax_prefetch_ring(const float* x, float* y, int rows, int cols, int slots)
{
    extern __shared__ float4 held[];  // `slots` chunks of a row
    __shared__ RowRing<CLUSTER, AHEAD, MAX_SLOTS> ring;
    RowPipeline p(ring, held, x, rows, cols, slots);  // the host sees to it that cols % 4 == 0

    // Rows are drawn and fetched as in rung 12 (row_ring.cuh). The first is fetched alone, so
    // that it lands first; the other slots fill once it has.
    for (int j = 0; j <= slots; j++) p.share(j);
    p.fetch(0);

    for (int k = 0;; k++) {
        int row = p.row(k);
        if (row >= rows) break;
        p.wait_landed(k);
        if (k == 0)
            for (int j = 1; j < slots; j++) p.fetch(j);

        // This thread's float4s into registers: their max, then their exps against it.
        float4 v[VEC];
        float m = load_held<VEC, THREADS>(v, p.slot(k), p.n4);
        float d = exps_held<VEC, THREADS>(v, m, p.n4);
        MaxSum mine = block_pair({m, d});  // its barrier: every thread has read the slot

        // The slot is free: it takes the row `slots` rounds ahead, before this block's pair goes
        // out, so that once the leader has every block's pair of this row, each block is done
        // with the rows that the leader's next pushes overwrite. The leader shares the row after.
        p.fetch(k + slots);
        p.push_pair(k, mine);
        p.share(k + slots + 1);
        MaxSum total = p.total(k);
        __syncthreads();  // block_pair's partials are read before the next round writes them

        // Straight from registers to the output.
        store_scaled<VEC, THREADS>(reinterpret_cast<float4*>(y + (size_t)row * cols) + p.begin, v, m, total, p.n4);
    }
}
// --8<-- [end:kernel]
