// The array seen as one long line: 1024 threads per block along x only.

// --8<-- [start:kernel]
extern "C" __global__ void add_1d(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
