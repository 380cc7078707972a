"""Figures derived from stored rows: throughput, % of the measured ceiling, occupancy (how two rows
compare is the noise rule's, in noise.py).

Used by ``--summary`` and by the site, so both always say the same thing about a row.
"""

from __future__ import annotations

from .format import Provenance, Record, Resources, Row
from .rows import WorkRow


def median_ms(row: Row | None) -> float | None:
    return row.time.median_ms if row is not None and row.time else None


def throughput(row: Row) -> tuple[float | None, str | None]:
    """``(value, unit)``: TFLOP/s where the row counts flops (compute-bound work: an experiment
    that declares both, as attention does for its roofline, is judged by its arithmetic), else
    GB/s where it moves bytes."""
    ms = median_ms(row)
    if ms is None or not isinstance(row, WorkRow):  # a phase of a program: no work declared
        return None, None
    if row.flops:
        return row.flops / (ms * 1e9), "TFLOP/s"
    if row.bytes:
        return row.bytes / (ms * 1e6), "GB/s"
    return None, None


def ceiling_gbs(record: Record, row: Row | None = None) -> float | None:
    """The copy bandwidth measured in the same run, if any: for ``row``, on the GPU that ran it
    (each part of a run split over several GPUs has its own)."""
    ceiling = record.ceiling_of(row) if row is not None else record.ceiling
    return ceiling.gbs if ceiling and ceiling.gbs else None


def fma_tflops(record: Record) -> float | None:
    """The FP32 FMA rate the ceilings run measured, if any."""
    row = next((r for r in record.rows if r.name == "fp32 fma" and r.time), None)
    return throughput(row)[0] if row else None


def pct_of_ceiling(row: Row, record: Record) -> float | None:
    """Bandwidth as a percentage of the copy bandwidth measured in the same run on the same GPU;
    None for rows that are not GPU memory traffic (copies to or from the host, CPU baselines)."""
    value, unit = throughput(row)
    ceiling = ceiling_gbs(record, row)
    if unit != "GB/s" or not ceiling or row.kind == "transfer" or row.on_cpu:
        return None
    return 100.0 * value / ceiling


def verified(row: Row) -> bool | None:
    """True when every element matched the reference; None when nothing was checked."""
    if row.kind in ("transfer", "ceiling") or row.status == "skipped":
        return None
    return row.status == "ok"


def occupancy(resources: Resources, block_threads: int, dynamic_smem: int, gpu: Provenance) -> tuple[float, str]:
    """Theoretical occupancy (resident warps / the SM's maximum) and what limits it, from the
    compiler's report and the SM limits recorded in the provenance (Hopper's allocation rules:
    registers per warp in units of 256, shared memory in 128-byte units plus 1 KiB per block)."""
    warps = -(-block_threads // 32)
    max_warps = gpu.max_threads_per_sm // 32
    regs_per_warp = max(256, -(-resources.registers * 32 // 256) * 256)  # ptxas may report 0
    smem = resources.smem_bytes + dynamic_smem
    limits = {"threads": max_warps // warps, "blocks": gpu.max_blocks_per_sm,
              "registers": gpu.registers_per_sm // (regs_per_warp * warps)}
    if smem:
        limits["shared memory"] = gpu.smem_per_sm_bytes // (-(-(smem + 1024) // 128) * 128)
    limiter = min(limits, key=limits.get)
    return limits[limiter] * warps / max_warps, limiter
