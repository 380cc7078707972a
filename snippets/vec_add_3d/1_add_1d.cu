// The array seen as one long line: 1024 threads per block along x only. nx * ny * nz can pass
// 2^31 - 1, so the size and the index are 64-bit (widened before the multiply).

// --8<-- [start:kernel]
extern "C" __global__ void add_1d(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
