// Rung 2: fused. Still one block per query row, but the scores never leave the chip. The block
// takes the keys 128 at a time: each thread scores one key, the chunk's probabilities wait in
// shared memory, and the row is folded into a running maximum m, a running sum l and a running
// output row (one column per thread) by online softmax. When a chunk raises the maximum from m to
// m', everything accumulated so far is multiplied by exp(m - m'), so the result is exactly the
// softmax of the whole row, after one pass over K and V, with no workspace.
// Scores are kept in the log2 domain (the query is multiplied by scale * log2(e) once), so each
// exponential is one exp2f.
// Each thread still reads its own key's row of K alone, 32 rows per warp: rung 3 shares them.
// Any N; D at most 128 (a column per thread).
#include "attention.cuh"

#define THREADS 128  // keys per chunk, and output columns

// --8<-- [start:kernel]
template <typename T>
__device__ __forceinline__ void online_row(const T* Q, const T* K, const T* V, float* O, int n, int d,
                                           float scale, int causal)
{
    __shared__ float qs[THREADS];  // the query row, times scale * log2(e)
    __shared__ float ps[THREADS];  // this chunk's probabilities
    __shared__ float scratch[32];
    const int i = blockIdx.x, t = threadIdx.x;
    const long long bh = head_index();
    const T* k = K + bh * n * d;
    const T* v = V + bh * n * d;
    if (t < d) qs[t] = to_float(Q[(bh * n + i) * d + t]) * (scale * LOG2E);
    __syncthreads();
    // Causal: keys 0..i. Key 0 is always among them, so no row is ever fully masked.
    const int keys = causal ? i + 1 : n;

    float m = -INFINITY, l = 0.0f, acc = 0.0f;  // acc: output column t
    for (int j0 = 0; j0 < keys; j0 += THREADS) {
        const int j = j0 + t;
        float s = -INFINITY;  // keys past the end weigh nothing
        if (j < keys) {
            const T* kj = k + (long long)j * d;
            s = 0.0f;
            for (int c = 0; c < d; ++c) s += qs[c] * to_float(kj[c]);
        }
        const float m_new = fmaxf(m, block_reduce(s, scratch, Max()));
        // While the maximum is still -inf (only -inf scores so far), shift by 0 instead:
        // -inf - -inf would be NaN.
        const float shift = m_new == -INFINITY ? 0.0f : m_new;
        const float p = exp2f(s - shift);
        ps[t] = p;
        const float alpha = exp2f(m - shift);  // rescales what was accumulated under the old maximum
        l = l * alpha + block_reduce(p, scratch, Sum());  // block_reduce's barriers also publish ps
        m = m_new;
        if (t < d) {
            acc *= alpha;
            const int count = min(THREADS, keys - j0);
            for (int jj = 0; jj < count; ++jj) acc += ps[jj] * to_float(v[(long long)(j0 + jj) * d + t]);
        }
        __syncthreads();  // everyone is done with ps before the next chunk overwrites it
    }
    if (t < d) O[(bh * n + i) * d + t] = acc / l;
}

extern "C" __global__ void __launch_bounds__(THREADS)
attention_online_row(const void* q, const void* k, const void* v, float* o, int n, int d, float scale, int causal,
                     int bf16)
{
    if (bf16) {
        online_row(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                   static_cast<const __nv_bfloat16*>(v), o, n, d, scale, causal);
    } else {
        online_row(static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v), o,
                   n, d, scale, causal);
    }
}
// --8<-- [end:kernel]
