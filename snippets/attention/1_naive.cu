// Rung 1: attention as the textbook writes it, S = Q K^T * scale, P = softmax(S), O = P V, with S
// materialised in global memory. One launch, one block of 256 threads per query row i:
//   1. each thread takes keys j = t, t + 256, ... and writes s_ij = (q_i . k_j) * scale to S;
//   2. the block finds the row's maximum, overwrites each s_ij with p_ij = exp(s_ij - max),
//      and sums them into l_i;
//   3. each thread takes output columns c = t, t + 256, ... and forms o_ic = sum_j p_ij v_jc / l_i.
// S is the workspace `scores`, B x H x N x N floats (the engine has no scratch buffers: it is an
// input that the other rungs ignore). Writing it and reading it back twice is what this rung
// costs; the next rung keeps it on the chip. Any N and D (inputs small enough for S to fit).
#include "attention.cuh"

// --8<-- [start:kernel]
template <typename T>
__device__ __forceinline__ void naive(const T* Q, const T* K, const T* V, float* S, float* O, int n, int d,
                                      float scale, int causal)
{
    __shared__ float scratch[32];
    const int i = blockIdx.x;  // this block's query row
    const long long bh = head_index();
    const T* q = Q + (bh * n + i) * d;
    const T* k = K + bh * n * d;
    const T* v = V + bh * n * d;
    float* s = S + (bh * n + i) * n;  // row i of this head's N x N scores
    float* o = O + (bh * n + i) * d;
    // Causal: query i sees keys 0..i. Key 0 is always among them, so no row is ever fully
    // masked (and the 0/0 of an empty softmax cannot happen).
    const int keys = causal ? i + 1 : n;

    // 1. Scores, one key per thread.
    for (int j = threadIdx.x; j < keys; j += blockDim.x) {
        const T* kj = k + (long long)j * d;
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += to_float(q[c]) * to_float(kj[c]);
        s[j] = dot * scale;
    }
    // 2. Softmax in place. Each thread reads back only the scores it wrote itself.
    float m = -INFINITY;
    for (int j = threadIdx.x; j < keys; j += blockDim.x) m = fmaxf(m, s[j]);
    m = block_reduce(m, scratch, Max());
    float l = 0.0f;
    for (int j = threadIdx.x; j < keys; j += blockDim.x) {
        const float p = expf(s[j] - m);
        s[j] = p;
        l += p;
    }
    l = block_reduce(l, scratch, Sum());  // its barriers also make every p_ij visible to the whole block
    // 3. O = P V / l, one output column per thread.
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < keys; ++j) acc += s[j] * to_float(v[(long long)j * d + c]);
        o[c] = acc / l;
    }
}

extern "C" __global__ void __launch_bounds__(256)
attention_naive(const void* q, const void* k, const void* v, float* scores, float* o, int n, int d, float scale,
                int causal, int bf16)
{
    if (bf16) {
        naive(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
              static_cast<const __nv_bfloat16*>(v), scores, o, n, d, scale, causal);
    } else {
        naive(static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v), scores,
              o, n, d, scale, causal);
    }
}
// --8<-- [end:kernel]
