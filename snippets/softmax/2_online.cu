// Rung 2: still one thread per row, but the maximum and the normaliser come from one pass: when
// a new maximum appears, the sum so far is rescaled by exp(old_max - new_max).
#include <math.h>

// --8<-- [start:kernel]
extern "C" __global__ void softmax_online(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    const float* in = x + (size_t)row * cols;
    float* out = y + (size_t)row * cols;
    float m = -INFINITY, d = 0.0f;
    for (int j = 0; j < cols; j++) {
        float v = in[j];
        if (v == -INFINITY) {
            continue;  // adds nothing, and -inf - -inf would be NaN
        }
        if (v > m) {
            d = d * expf(m - v) + 1.0f;  // the correction term
            m = v;
        } else {
            d += expf(v - m);
        }
    }
    for (int j = 0; j < cols; j++) {
        out[j] = expf(in[j] - m) / d;
    }
}
// --8<-- [end:kernel]
