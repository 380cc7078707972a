// Rung 4, as the walkthrough wrote it: warp-shuffle reductions, then the warps' maxima combined
// with atomicMax on the float's bits reinterpreted as an int. That ordering is right for
// non-negative floats only: negative floats compare backwards as ints, and -inf (0xff800000)
// is the largest negative int of all. So on a row with no positive value the maximum never
// leaves its starting -inf, exp(x - (-inf)) is +inf, and every output is inf / inf = NaN.
#include "reduce.cuh"

#define THREADS 256

// --8<-- [start:kernel]
extern "C" __global__ void softmax_atomicmax(const float* x, float* y, int rows, int cols)
{
    __shared__ int row_max_bits;
    __shared__ float row_sum;
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    if (threadIdx.x == 0) {
        row_max_bits = __float_as_int(-INFINITY);
        row_sum = 0.0f;
    }
    __syncthreads();

    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, in[j]);
    m = warp_max(m);
    if (threadIdx.x % 32 == 0) atomicMax(&row_max_bits, __float_as_int(m));  // the bug
    __syncthreads();
    m = __int_as_float(row_max_bits);

    float d = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) d += expf(in[j] - m);
    d = warp_sum(d);
    if (threadIdx.x % 32 == 0) atomicAdd(&row_sum, d);
    __syncthreads();

    for (int j = threadIdx.x; j < cols; j += THREADS) out[j] = expf(in[j] - m) / row_sum;
}
// --8<-- [end:kernel]
