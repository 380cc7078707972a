// Rung 2: still one thread per row, but the maximum and the normaliser come from one pass: when
// a new maximum appears, the sum so far is rescaled by exp(old_max - new_max).
#include <math.h>

// --8<-- [start:kernel]
extern "C" __global__ void softmax_online(const float* x, float* y, int rows, int cols)
{
    long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // 64-bit: rows * cols passes 2^31
    if (row >= rows) {
        return;
    }
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float m = -INFINITY, d = 0.0f;
    for (int j = 0; j < cols; j++) {
        float v = in[j];
        if (v == -INFINITY) {
            continue;  // adds nothing, and -inf - -inf would be NaN
        }
        if (v > m) {
            // The correction term, plus exp(v - v) for v itself: 1, except at v = +inf, where
            // inf - inf is NaN, as in PyTorch and the other rungs (a 1 here made the rest of a
            // row with one +inf 0 instead of NaN).
            d = d * expf(m - v) + expf(v - v);
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
