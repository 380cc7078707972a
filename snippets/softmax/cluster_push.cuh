// Shared by rungs 12 and 13: one value pushed into another block's shared memory, counted on
// that block's own mbarrier, so that no block ever reads another's shared memory. sm_90a only.
#pragma once
#include "hopper.cuh"  // cluster_addr
#include "reduce.cuh"  // MaxSum

// Write `v` into block `rank`'s `slot`, completing its bytes on that block's `bar`: the receiver
// waits on its own mbarrier, and nobody reads another block's shared memory.
__device__ __forceinline__ void push(MaxSum* slot, uint64_t* bar, unsigned rank, MaxSum v)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n"
                 ::"r"(cluster_addr(slot, rank)), "f"(v.m), "f"(v.d), "r"(cluster_addr(bar, rank)) : "memory");
}

__device__ __forceinline__ void push(int* slot, uint64_t* bar, unsigned rank, int v)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n"
                 ::"r"(cluster_addr(slot, rank)), "r"(v), "r"(cluster_addr(bar, rank)) : "memory");
}
