// What rung 6 adds to hopper.cuh's machinery (mbarriers, TMA, wgmma descriptors and waits,
// named barriers): the two wgmma shapes that only attention multiplies by, built from
// hopper.cuh's operand lists.
#pragma once
#include "flash.cuh"  // pack, and attention.cuh's types
#include "hopper.cuh"

// S = Q K^T (or S += Q K^T, with `accumulate`) for 64 queries and 128 keys, 16 of D: both
// operands from shared memory and K-major (K's rows hold D contiguous, and D is what the
// product sums over), so B is not transposed (the last immediate, 0).
#define WGMMA_QK(TYPE, PTX)                                                                                           \
    __device__ __forceinline__ void wgmma_qk(float (&d)[64], uint64_t desc_q, uint64_t desc_k, bool accumulate, TYPE) \
    {                                                                                                                 \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                     \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX "." PTX " {" WGMMA_REGS64 "}, "               \
                     "%64, %65, p, 1, 1, 0, 0;\n}\n"                                                                  \
                     : WGMMA_ACC64 : "l"(desc_q), "l"(desc_k), "r"(int(accumulate)));                                 \
    }
WGMMA_QK(__half, "f16")
WGMMA_QK(__nv_bfloat16, "bf16")

// O += P V for 64 queries, 16 keys and all D columns: P from registers (the A fragment of
// mma.sync's m16n8k16, one warp's 16 rows each), V from shared memory with D contiguous
// (N-major), so transposed on the way in (the last immediate, 1).
#define WGMMA_PV(N, TYPE, PTX, ACC, REGS, A)                                                                   \
    __device__ __forceinline__ void wgmma_pv(float (&d)[N / 2], const unsigned (&p)[4], uint64_t desc_v, TYPE) \
    {                                                                                                          \
        asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " {" REGS "}, "             \
                     A ", 1, 1, 1, 1;\n"                                                                       \
                     : ACC : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(desc_v));                         \
    }
WGMMA_PV(128, __half, "f16", WGMMA_ACC64, WGMMA_REGS64, "{%64, %65, %66, %67}, %68")
WGMMA_PV(128, __nv_bfloat16, "bf16", WGMMA_ACC64, WGMMA_REGS64, "{%64, %65, %66, %67}, %68")
WGMMA_PV(64, __half, "f16", WGMMA_ACC32, WGMMA_REGS32, "{%32, %33, %34, %35}, %36")
WGMMA_PV(64, __nv_bfloat16, "bf16", WGMMA_ACC32, WGMMA_REGS32, "{%32, %33, %34, %35}, %36")
#undef WGMMA_QK
#undef WGMMA_PV
