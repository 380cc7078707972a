// Rung 1: one thread per element, the first kernel everybody writes.
// The grid is rounded up to whole blocks, so the last block has threads past the end of the
// arrays: the `if (i < n)` guard keeps them from reading or writing out of bounds.

// --8<-- [start:kernel]
extern "C" __global__ void vec_add(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
