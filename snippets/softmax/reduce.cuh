// Shared by the later rungs: the (max, sum) pair of online softmax, and how to reduce it across
// a warp and across a block.
#pragma once
#include <math.h>

// The running maximum m of a set of values and d = sum(exp(x - m)) over it. Two such pairs
// merge exactly: rescale each sum to the larger maximum and add.
struct MaxSum {
    float m;
    float d;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) {
        return {m, 0.0f};  // nothing but -inf (or nothing at all) on either side
    }
    return {m, a.d * expf(a.m - m) + b.d * expf(b.m - m)};
}

// Fold one value into a pair. -inf contributes nothing (and must not: -inf - -inf is NaN).
__device__ __forceinline__ MaxSum push(MaxSum s, float x)
{
    if (x == -INFINITY) {
        return s;
    }
    if (x > s.m) {
        return {x, s.d * expf(s.m - x) + 1.0f};
    }
    return {s.m, s.d + expf(x - s.m)};
}

// --8<-- [start:shuffle]
__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// --8<-- [end:shuffle]

// --8<-- [start:pair]
// Pair reductions for where they are on the critical path (rung 12's, round after round).
// A warp's pair: the max first, then each sum rescaled to it and added, one exp a lane (each
// merge of warp_reduce takes two).
__device__ __forceinline__ MaxSum warp_pair(MaxSum v)
{
    float m = warp_max(v.m);
    return {m, warp_sum(m == -INFINITY ? 0.0f : v.d * __expf(v.m - m))};
}

// The pair of a block of whole warps, in every thread, past one barrier (block_reduce takes
// two): every warp reduces the warps' pairs itself. The caller syncs the block before the
// next call writes `partial` again.
__device__ __forceinline__ MaxSum block_pair(MaxSum v)
{
    __shared__ MaxSum partial[32];
    v = warp_pair(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    int lane = threadIdx.x % 32;
    return warp_pair(lane < blockDim.x / 32 ? partial[lane] : MaxSum{-INFINITY, 0.0f});
}
// --8<-- [end:pair]

// --8<-- [start:warp]
__device__ __forceinline__ MaxSum warp_reduce(MaxSum v)
{
    // Butterfly: after log2(32) = 5 exchanges every lane holds the whole warp's pair.
    for (int offset = 16; offset > 0; offset >>= 1) {
        MaxSum other = {__shfl_xor_sync(0xffffffffu, v.m, offset),
                        __shfl_xor_sync(0xffffffffu, v.d, offset)};
        v = merge(v, other);
    }
    return v;
}

// Warp leaders hand their pairs to warp 0 through shared memory; every thread gets the result.
__device__ __forceinline__ MaxSum block_reduce(MaxSum v)
{
    __shared__ MaxSum partial[32];
    __shared__ MaxSum result;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_reduce(v);
    if (lane == 0) {
        partial[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        int warps = (blockDim.x + 31) / 32;
        v = warp_reduce(lane < warps ? partial[lane] : MaxSum{-INFINITY, 0.0f});
        if (lane == 0) {
            result = v;
        }
    }
    __syncthreads();
    return result;
}
// --8<-- [end:warp]
