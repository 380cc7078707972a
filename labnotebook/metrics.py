"""Figures derived from stored rows: throughput, % of the measured ceiling, speedups, staleness.

Used by ``--summary`` and by the site, so both always say the same thing about a row.
"""

from __future__ import annotations


def median_ms(row: dict) -> float | None:
    t = row.get("time")
    return t["median_ms"] if t else None


def throughput(row: dict) -> tuple[float | None, str | None]:
    """``(value, unit)``: GB/s where the row moves bytes, else TFLOP/s where it does flops."""
    ms = median_ms(row)
    if ms is None:
        return None, None
    if row.get("bytes"):
        return row["bytes"] / (ms * 1e6), "GB/s"
    if row.get("flops"):
        return row["flops"] / (ms * 1e9), "TFLOP/s"
    return None, None


def pct_of_ceiling(row: dict, record: dict) -> float | None:
    """Bandwidth as a percentage of the copy bandwidth measured in the same run."""
    value, unit = throughput(row)
    ceiling = (record.get("ceiling") or {}).get("gbs")
    if unit != "GB/s" or not ceiling or row.get("kind") in ("transfer",) or row.get("device") == "cpu":
        return None
    return 100.0 * value / ceiling


def speedup(row: dict, over: dict | None) -> float | None:
    """How many times faster ``row`` is than ``over`` (same case), by medians."""
    a, b = median_ms(row), median_ms(over) if over else None
    return b / a if a and b else None


def verified(row: dict) -> bool | None:
    """True when every element matched the reference; None when nothing was checked."""
    if row.get("kind") in ("transfer", "ceiling"):
        return None
    return {"ok": True, "failed": False, "xfail": False}.get(row["status"])


def is_stale(record: dict, current_hash: str | None) -> bool:
    """A record is stale when the sources that produced it have changed since."""
    return current_hash is not None and record.get("source_hash") != current_hash


def occupancy(resources: dict, block_threads: int, dynamic_smem: int, gpu: dict) -> tuple[float, str]:
    """Theoretical occupancy (resident warps / the SM's maximum) and what limits it, from the
    compiler's report and the SM limits recorded in the provenance (Hopper's allocation rules:
    registers per warp in units of 256, shared memory in 128-byte units plus 1 KiB per block)."""
    warps = -(-block_threads // 32)
    max_warps = gpu["max_threads_per_sm"] // 32
    regs_per_warp = -(-resources["registers"] * 32 // 256) * 256
    smem = resources.get("smem_bytes", 0) + dynamic_smem
    limits = {"threads": max_warps // warps, "blocks": gpu["max_blocks_per_sm"],
              "registers": gpu["registers_per_sm"] // (regs_per_warp * warps)}
    if smem:
        limits["shared memory"] = gpu["smem_per_sm_bytes"] // (-(-(smem + 1024) // 128) * 128)
    limiter = min(limits, key=limits.get)
    return limits[limiter] * warps / max_warps, limiter
