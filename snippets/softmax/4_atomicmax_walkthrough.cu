// Rung 4, as the walkthrough wrote it: warp-shuffle reductions, then the warps' maxima combined
// with atomicMax on the float's bits reinterpreted as an int. That ordering is right for
// non-negative floats only: negative floats compare backwards as ints, and -inf (0xff800000)
// is the largest negative int of all. So on a row with no positive value the maximum never
// leaves its starting -inf, exp(x - (-inf)) is +inf, and every output is inf / inf = NaN.
#include "atomic_softmax.cuh"

// --8<-- [start:kernel]
// The walkthrough's float maximum: the float's bits ordered as an int.
__device__ __forceinline__ void atomic_max_float(float* address, float value)
{
    atomicMax(reinterpret_cast<int*>(address), __float_as_int(value));  // the bug
}

extern "C" __global__ void softmax_atomicmax(const float* x, float* y, int rows, int cols)
{
    softmax_atomic<atomic_max_float>(x, y, cols);
}
// --8<-- [end:kernel]
