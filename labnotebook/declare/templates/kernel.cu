// y = alpha * x: one thread per element. Replace this with your kernel; keep one idea per file.
// --8<-- [start:kernel]
extern "C" __global__ void {name}(const float* x, float* y, float alpha, long long n)
{{
    // 64-bit index: blockIdx.x * blockDim.x overflows an int past 2^31 elements.
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        y[i] = alpha * x[i];
    }}
}}
// --8<-- [end:kernel]
