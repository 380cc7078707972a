// Rung 1: one thread per row, three passes over it: the maximum, the sum of exponentials, the
// output. Threads of a warp read 32 different rows, so no load is coalesced.
#include <math.h>

// --8<-- [start:kernel]
extern "C" __global__ void softmax_naive(const float* x, float* y, int rows, int cols)
{
    long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // 64-bit: rows * cols passes 2^31
    if (row >= rows) {
        return;
    }
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float m = -INFINITY;
    for (int j = 0; j < cols; j++) {
        m = fmaxf(m, in[j]);
    }
    float d = 0.0f;
    for (int j = 0; j < cols; j++) {
        d += expf(in[j] - m);
    }
    for (int j = 0; j < cols; j++) {
        out[j] = expf(in[j] - m) / d;
    }
}
// --8<-- [end:kernel]
