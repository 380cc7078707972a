// Rung 3: one block per row. Each thread reduces a strided slice (consecutive threads read
// consecutive floats: coalesced), then a shared-memory tree halves the partial results until
// one is left. Once for the maximum, once for the sum, then the output pass.
#include <math.h>

#define THREADS 256

// --8<-- [start:kernel]
extern "C" __global__ void softmax_shared_tree(const float* x, float* y, int rows, int cols)
{
    __shared__ float buf[THREADS];
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = -INFINITY;
    for (int j = t; j < cols; j += THREADS) {
        m = fmaxf(m, in[j]);
    }
    buf[t] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) {
            buf[t] = fmaxf(buf[t], buf[t + s]);
        }
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();  // everyone has read buf[0] before it is reused for the sum

    float d = 0.0f;
    for (int j = t; j < cols; j += THREADS) {
        d += expf(in[j] - m);
    }
    buf[t] = d;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) {
            buf[t] += buf[t + s];
        }
        __syncthreads();
    }
    d = buf[0];

    for (int j = t; j < cols; j += THREADS) {
        out[j] = expf(in[j] - m) / d;
    }
}
// --8<-- [end:kernel]
