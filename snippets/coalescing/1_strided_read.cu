// Thread i reads element i * stride and writes element i. With stride 1 a warp's 32 loads fall
// in one 128-byte line and the hardware serves them as one coalesced request; with stride 32
// (128 bytes) every load lands in its own line, and each 4 useful bytes cost a whole sector.
// i * stride passes 2^31 - 1 long before n does, so both are 64-bit.

// --8<-- [start:kernel]
extern "C" __global__ void strided_read(const float* __restrict__ in, float* __restrict__ out,
                                        int n, int stride)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i * stride];
    }
}
// --8<-- [end:kernel]
