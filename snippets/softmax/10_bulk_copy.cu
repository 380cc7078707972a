// Rung 10, for the longest rows: rung 9's cluster of 8 blocks, but no thread loads its own
// float4s. Each block's chunk of the row (up to 64 KiB) comes into shared memory in two bulk
// copies made by the TMA, Hopper's copy engine; the block folds the first half into its running
// (max, sum) while the second is still on its way, keeps each exp where its input was, and
// once the cluster has agreed on the row's statistics, scales them in place and hands each half
// back to the TMA to write. A thread holds no chunk in registers, and an exp is computed once.
// needs: sm_90a (thread-block clusters and the TMA's bulk copies)
#include <cooperative_groups.h>

#include "bulk_copy.cuh"
#include "cluster_reduce.cuh"

namespace cg = cooperative_groups;

#define CLUSTER 8
#define HALVES 2

// --8<-- [start:kernel]
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(512, 3)
softmax_bulk_copy(const float* x, float* y, int rows, int cols)
{
    extern __shared__ float4 chunk[];  // this block's part of the row, 4 * n4 floats
    __shared__ uint64_t landed[HALVES];
    cg::cluster_group cluster = cg::this_cluster();
    int rank = cluster.block_rank();
    int row = blockIdx.x / CLUSTER;
    int per_block = ((cols + CLUSTER - 1) / CLUSTER + 3) / 4 * 4;
    int begin = min(cols, rank * per_block), n = min(cols, begin + per_block) - begin;
    int n4 = (n + 3) / 4;
    // Half h is float4s [h * step, min(n4, (h + 1) * step)): whole strides of the block, so each
    // thread finds its float4s in the half it is folding.
    int step = ((n4 + HALVES - 1) / HALVES + blockDim.x - 1) / blockDim.x * blockDim.x;
    const float* in = x + (size_t)row * cols + begin;
    float* out = y + (size_t)row * cols + begin;
    bool bulk = cols % 4 == 0;  // every chunk then starts 16-byte aligned and is a multiple of 16 bytes

    if (bulk) {
        if (threadIdx.x == 0) bulk_load_pieces(chunk, in, n4, HALVES, step, landed);
        __syncthreads();
    } else {  // rows that are not 16-byte aligned: thread by thread, padded with -inf
        float* c = reinterpret_cast<float*>(chunk);
        for (int i = threadIdx.x; i < 4 * n4; i += blockDim.x) c[i] = i < n ? in[i] : -INFINITY;
        __syncthreads();
    }

    // Online softmax, a half at a time: m and d are this thread's running max and sum, and
    // half_max[h] the max its exps in half h are taken against.
    float m = -INFINITY, d = 0.0f, half_max[HALVES];
#pragma unroll
    for (int h = 0; h < HALVES; h++) {
        if (bulk) mbar_wait(&landed[h], 0);
        int hi = min(n4, (h + 1) * step);
        float mh = m;
        for (int k = h * step + threadIdx.x; k < hi; k += blockDim.x) {
            float4 q = chunk[k];
            mh = fmaxf(mh, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
        }
        if (mh != -INFINITY) {
            d *= __expf(m - mh);
            for (int k = h * step + threadIdx.x; k < hi; k += blockDim.x) {
                float4 q = chunk[k];
                q = make_float4(__expf(q.x - mh), __expf(q.y - mh), __expf(q.z - mh), __expf(q.w - mh));
                d += q.x + q.y + q.z + q.w;
                chunk[k] = q;
            }
        } else {  // nothing but -inf so far: every exp is 0
            for (int k = h * step + threadIdx.x; k < hi; k += blockDim.x) chunk[k] = make_float4(0, 0, 0, 0);
        }
        half_max[h] = m = mh;
    }
    MaxSum total = cluster_reduce<CLUSTER>({m, d});
    // exp(x - M) / D = exp(x - half_max) * exp(half_max - M) / D: one exp per half, not per element.
#pragma unroll
    for (int h = 0; h < HALVES; h++) {
        int lo = min(n4, h * step), hi = min(n4, lo + step);
        float scale = __expf(half_max[h] - total.m) / total.d;
        for (int k = lo + threadIdx.x; k < hi; k += blockDim.x) {
            float4 q = chunk[k];
            chunk[k] = make_float4(q.x * scale, q.y * scale, q.z * scale, q.w * scale);
        }
        if (bulk) {
            fence_proxy_async();
            __syncthreads();
            if (threadIdx.x == 0 && hi > lo) bulk_store(out + 4 * lo, chunk + lo, 16 * (hi - lo));
        }
    }
    if (bulk) {
        if (threadIdx.x == 0) bulk_read_wait<0>();
    } else {
        __syncthreads();
        const float* c = reinterpret_cast<const float*>(chunk);
        for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = c[i];
    }
    cluster.sync();  // no block exits while another may read its partial, or before the TMA has read its chunk
}
// --8<-- [end:kernel]
