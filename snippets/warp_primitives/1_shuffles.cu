// Three warp primitives built on shuffles, each writing its own output so that every lane of
// every warp can be checked. Lanes past the end of the array hold 0 and still take part: a
// full-mask shuffle needs all 32 lanes, so no thread returns early. The size and the index are
// 64-bit, so any array fits.

// --8<-- [start:sum]
// After five halvings, lane 0 holds the sum of all 32 lanes.
__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}
// --8<-- [end:sum]

// --8<-- [start:broadcast]
// Every lane takes lane 0's value, without touching memory.
__device__ float warp_broadcast(float v)
{
    return __shfl_sync(0xffffffffu, v, 0);
}
// --8<-- [end:broadcast]

// --8<-- [start:scan]
// Inclusive prefix sum (Kogge-Stone): at step k every lane adds the value 2^k lanes below it,
// so after five steps lane j holds the sum of lanes 0..j.
__device__ float warp_inclusive_scan(float v, int lane)
{
    for (int offset = 1; offset < 32; offset <<= 1) {
        float below = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) {
            v += below;
        }
    }
    return v;
}
// --8<-- [end:scan]

// --8<-- [start:kernel]
extern "C" __global__ void warp_primitives(const float* __restrict__ x, float* __restrict__ sums,
                                           float* __restrict__ firsts, float* __restrict__ scans, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    float v = i < n ? x[i] : 0.0f;
    float total = warp_sum(v);
    float first = warp_broadcast(v);
    float prefix = warp_inclusive_scan(v, lane);
    if (i < n) {
        if (lane == 0) {
            sums[i / 32] = total;
        }
        firsts[i] = first;
        scans[i] = prefix;
    }
}
// --8<-- [end:kernel]
