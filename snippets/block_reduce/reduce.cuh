// Shared by both rungs: a block-wide sum, and the finish that turns per-block sums into one
// total inside the same launch.
#pragma once

// --8<-- [start:block_sum]
// Warp shuffles, then warp 0 sums the warps' results through shared memory. The total is
// valid in thread 0.
__device__ float block_sum(float v)
{
    __shared__ float warp_totals[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_totals[threadIdx.x] : 0.0f;
    if (warp == 0) {
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}
// --8<-- [end:block_sum]

// --8<-- [start:finish]
// Each block stores its sum; the last block to arrive adds them all up. atomicInc wraps the
// counter back to 0 after the last block, so the next launch finds it ready.
__device__ void finish(float block_total, float* partials, unsigned int* counter, float* total)
{
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block_total;
        __threadfence();  // the partial is visible device-wide before the counter moves
        last = atomicInc(counter, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        float s = 0.0f;
        for (int j = threadIdx.x; j < gridDim.x; j += blockDim.x) s += __ldcg(partials + j);
        s = block_sum(s);
        if (threadIdx.x == 0) *total = s;
    }
}
// --8<-- [end:finish]
