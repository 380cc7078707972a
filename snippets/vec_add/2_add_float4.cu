// Rung 2: each thread moves 16 bytes per load (float4) and strides over the whole array, so a
// grid sized to the GPU (not to the data) keeps several wide loads in flight per thread.
// cudaMalloc returns 256-byte aligned buffers, so the float4 views of a, b and c are aligned;
// the last n % 4 elements are added one at a time by the first threads.

// --8<-- [start:kernel]
extern "C" __global__ void vec_add_float4(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ c, long long n)
{
    long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (long long i = tid; i < n4; i += stride) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    // The tail that does not fill a float4.
    long long i = 4 * n4 + tid;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
// --8<-- [end:kernel]
