// The FP32 compute roof: every thread runs CHAINS independent fused multiply-adds in a loop, so
// that the FMA pipes never wait on a result (latency about 4 cycles, one chain would leave them
// idle). The one store the compiler cannot prove dead keeps the loop from being removed.
#define CHAINS 8

extern "C" __global__ void fma_peak(float* out, int iterations, float a, float b) {
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = threadIdx.x + c;
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], a, b);
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) sum += x[c];
    if (sum == -1.0f) out[blockIdx.x] = sum;  // never true for the launch's a and b
}
