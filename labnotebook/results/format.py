"""The results format: the one definition of what ``build_results.py`` writes and what the
store, ``--summary``, the site and the analysis notebook read.

A results file holds one ``Record``: an experiment's run on one GPU, with its ``Row``\\ s. Every
field is documented where it is defined. Files carry ``FORMAT``; a file of an older version is
brought up to date on load by ``migrate()`` (as asv's ``update_to_N`` do), so a format change
never needs a GPU run. Writing always uses the current version.

Format history:

1. The first format (rows as plain dictionaries).
2. ``Check.bound_ratio`` (how close a row came to failing), ``Row.verify_s`` (the cost of
   verification), ``Provenance.device_index`` (which GPU of a node ran it),
   ``Record.peak_host_bytes`` and ``KernelInfo.language`` for every kernel.
3. ``Record.profile``: the Nsight Compute pass (``ProfilePass``), ``Provenance.ncu`` and
   ``Row.intensity`` (where the roofline places a row); the ceilings add an ``fp32 fma`` row.
4. Keys by what was measured (``labnotebook/results/keys.py``): ``Record.sources`` and
   ``ProfilePass.sources``, the hash of each file of the key; ``source_hash`` is now their digest.
5. What the refresh cost: ``Record.wall_s`` (the whole of it, the sanitizer and profile passes
   included) and ``Record.phases_s`` (by ``REFRESH_PHASES``), in place of ``duration_s`` (the timed
   worker's time alone, which a migrated file keeps as ``phases_s["timed run"]``).
6. ``Record.part``: which pass made the record. The cases of 2^31 elements and more (``large_cases``)
   run in a pass of their own, ``build_results.py --large``, into ``<gpu>.large.json``; a
   file of format 5 or older is of the main pass (it may hold large cases' rows as well).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ResultsError

NAME = "labnotebook-results"
VERSION = 7
FORMAT = f"{NAME}/{VERSION}"

Kind = Literal["kernel", "baseline", "transfer", "phase", "ceiling"]
KINDS = ("kernel", "baseline", "transfer", "phase", "ceiling")
# ok: verified (and timed, for a timed case); failed: wrong answer or an error, with ``error``;
# xfail: failed as its declaration says it must; skipped: not run, with the reason in ``error``.
Status = Literal["ok", "failed", "xfail", "skipped"]
STATUSES = ("ok", "failed", "xfail", "skipped")
# Which pass made a record: "main" (the timed and edge cases, sanitized and profiled:
# ``build_results.py``) or "large" (the cases of 2^31 elements and more, verified only:
# ``build_results.py --large``). A default refresh is the main pass; the large one needs up to
# 24 GiB of GPU memory and several times the host's, and a minute per GPU.
Part = Literal["main", "large"]
PARTS = ("main", "large")

# Where an experiment's refresh spends its wall time (``Record.phases_s``), in the order it goes.
REFRESH_PHASES = {
    "start-up": "the timed run's process: starting Python, imports, the CUDA context, writing the record "
                "(its wall time not counted in a phase below)",
    "compile": "nvcc for every CUDA kernel, and loading them",
    "inputs": "drawing the inputs, computing the float64 references and uploading them, at timed cases",
    "verify": "the kernels' first runs at timed cases: poisoning, running, fetching, comparing every element",
    "timing": "timing the kernels, the copy ceiling and host-device copies",
    "baselines": "the library and CPU baselines at timed cases: setup, checking and timing; the phase program",
    "edge cases": "everything at the edge cases: inputs, references, runs and checks",
    "large cases": "the large pass (--large): everything at the cases of 2^31 elements and more",
    "sanitizer": "the compute-sanitizer pass: from its first tool's start to its last tool's end",
    "profile": "the Nsight Compute pass",
    "timed run": "files of format 4 and older: the timed run's worker time, not broken down",
}


@dataclass(frozen=True)
class Timing:
    """CUDA-event (or host-clock, for CPU baselines) times of ``reps`` repetitions, in ms."""

    median_ms: float
    q10_ms: float
    q90_ms: float
    min_ms: float
    max_ms: float
    reps: int


@dataclass(frozen=True)
class Check:
    """How an output compared with its float64 reference, element by element. Element ``i``
    passes when ``|out - ref| <= atol + rtol * |ref|`` (non-finite references exactly)."""

    max_abs_err: float
    max_rel_err: float
    mismatches: int
    elements: int
    atol: float
    rtol: float
    # The worst element's error over its own bound: 0 is exact, at most 1 passes, inf is a NaN
    # or a non-finite mismatch. None in files of format 1, which did not record it.
    bound_ratio: float | None = None


@dataclass(frozen=True)
class LaunchShape:
    """The geometry a CUDA kernel was launched with at this case."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared_bytes: int = 0


@dataclass
class Row:
    """One thing measured at one case: a kernel, a baseline, a copy, a phase of a whole
    program, or the copy ceiling."""

    kind: Kind
    name: str  # kernel name (the .cu file's stem), baseline name, "h2d"/"d2h", phase name
    case: str  # the case's display name, unique within the experiment
    params: dict[str, Any]  # the case's parameters (sizes, ...)
    status: Status
    timed: bool  # a timed case (False: an edge or large case, verified only)
    error: str | None = None  # why it failed or was skipped
    bytes: int | None = None  # bytes a perfect kernel moves at this case (read + written)
    flops: int | None = None  # floating-point operations at this case
    intensity: float | None = None  # flops per byte of the least traffic (the roofline's x)
    time: Timing | None = None  # set for every timed row that verified
    check: Check | None = None  # the worst output's comparison, where outputs were verified
    verify_s: float | None = None  # seconds spent computing the reference and comparing
    launch: LaunchShape | None = None  # CUDA kernels
    digest: str | None = None  # of the output bytes (run/outputs.py): equal digests, identical outputs
    device: Literal["gpu", "cpu"] | None = None  # baselines: where they ran (how they were timed)
    unavailable: bool = False  # skipped because a module or GPU feature is missing here
    missing_module: str | None = None  # that module, so the build re-runs once it is installed
    memory: str | None = None  # transfers: the host memory they copy from ("pageable")
    fresh_processes: int | None = None  # phases: how many fresh processes the medians are over
    nvtx: bool | None = None  # phases: whether NVTX ranges were emitted

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median_ms(self) -> float | None:
        return self.time.median_ms if self.time else None


@dataclass(frozen=True)
class Resources:
    """ptxas's report for one entry function."""

    registers: int
    smem_bytes: int = 0  # static shared memory; dynamic shared memory is in the launch
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


@dataclass(frozen=True)
class KernelInfo:
    """How a kernel was built: its file, function, language and the compiler's report."""

    source: str
    function: str
    language: Literal["cuda", "python"] = "cuda"
    arch: str | None = None  # "sm_90" for CUDA kernels
    resources: Resources | None = None  # None for Python-DSL kernels (their compiler decides)
    expected_failure: str | None = None


@dataclass(frozen=True)
class Verdict:
    """One compute-sanitizer tool's findings for one kernel: ``errors`` is None when the tool
    did not finish; ``first`` is the first message. ``checked`` False: the tool had nothing to
    look at in this kernel and did not run it (racecheck where a kernel has no shared memory);
    ``first`` says why."""

    errors: int | None
    first: str | None = None
    checked: bool = True


SOL_THRESHOLD_PCT = 60.0  # ncu's SOLBottleneck rule: below this on both axes, latency limits a kernel
MEMORY_UNIT_SLACK = 5.0  # % points: how near a unit's own figure must be to ncu's memory figure


@dataclass(frozen=True)
class KernelProfile:
    """Nsight Compute's measurement of one GPU kernel launch (``ncu --page raw``, base units).
    Percentages are of the GPU's peak; any metric ncu did not report is None."""

    function: str  # the GPU function ncu saw (demangled, without its arguments)
    duration_ns: float | None = None  # one launch under the profiler, clocks not locked
    dram_gbs: float | None = None  # DRAM bytes read + written per second
    dram_pct: float | None = None  # DRAM throughput, % of peak
    memory_pct: float | None = None  # speed of light, memory: the busiest memory unit, % of peak
    l1_pct: float | None = None  # the L1/TEX cache (shared memory too) busy, % of its peak
    l2_pct: float | None = None  # the L2 cache busy, % of its peak
    sm_pct: float | None = None  # speed of light, compute (SM): the busiest pipeline, % of peak
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    achieved_occupancy_pct: float | None = None  # active warps per SM, % of the hardware maximum
    theoretical_occupancy_pct: float | None = None  # what the launch's resources allow
    registers: int | None = None  # per thread
    grid: str | None = None
    block: str | None = None
    # Warp-stall reasons, each as its share of all stall cycles per issued instruction
    # (``smsp__average_warps_issue_stalled_*_per_issue_active``). Files keep them sorted by
    # name, like every key: ``by_share`` is the order to read them in.
    stalls: dict[str, float] = field(default_factory=dict)

    @property
    def by_share(self) -> list[tuple[str, float]]:
        """The stall reasons, the largest share first."""
        return sorted(self.stalls.items(), key=lambda kv: (-kv[1], kv[0]))

    @property
    def limiter(self) -> str | None:
        """ncu's speed-of-light rule: below 60% of peak on both axes a kernel is latency-bound;
        otherwise bound by the busier of memory and compute."""
        if self.memory_pct is None or self.sm_pct is None:
            return None
        if max(self.memory_pct, self.sm_pct) < SOL_THRESHOLD_PCT:
            return "latency"
        return "memory" if self.memory_pct >= self.sm_pct else "compute"

    @property
    def memory_unit(self) -> str | None:
        """Which of L1 (with shared memory), L2 and DRAM ``memory_pct`` comes from: ncu's memory
        figure is the busiest of its units, each measured as its own throughput metric, which
        ours approach but need not equal (L1's is over its active cycles, L2's counts every
        sector), so the unit is the nearest within MEMORY_UNIT_SLACK points. None where none
        is that near, or in a profile taken before the units were recorded."""
        if self.memory_pct is None:
            return None
        units = [(abs(pct - self.memory_pct), unit) for unit, pct in
                 (("DRAM", self.dram_pct), ("L2", self.l2_pct), ("L1", self.l1_pct)) if pct is not None]
        gap, unit = min(units, default=(None, None))
        return unit if len(units) == 3 and gap <= MEMORY_UNIT_SLACK else None


@dataclass(frozen=True)
class Profile:
    """One kernel or baseline under the profiler at one case: every GPU kernel it launched, in
    order, or why there is none."""

    case: str
    launches: list[KernelProfile] = field(default_factory=list)
    error: str | None = None  # why it was not profiled

    @property
    def main(self) -> KernelProfile | None:
        """The launch that took longest: the one a library call or a multi-kernel rung is about."""
        timed = [k for k in self.launches if k.duration_ns is not None]
        return max(timed, key=lambda k: k.duration_ns) if timed else (self.launches[0] if self.launches else None)

    @property
    def duration_ns(self) -> float | None:
        times = [k.duration_ns for k in self.launches if k.duration_ns is not None]
        return sum(times) if times else None


@dataclass(frozen=True)
class ProfilePass:
    """The Nsight Compute pass over an experiment: each kernel and GPU baseline launched once at
    its profile case (the headline case, or the largest it is timed at)."""

    status: Literal["ok", "skipped", "failed"]  # skipped: no ncu here; failed: ncu or the worker failed
    reason: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)  # by kernel or baseline name
    # The profiler pass's own files (keys.PROFILER) -> their hashes: with the record's own key,
    # what the profile is keyed on. Empty in files older than format 4.
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ceiling:
    """The device-to-device copy bandwidth measured at the start of the run (read + written)."""

    gbs: float | None
    median_ms: float | None
    bytes: int | None


@dataclass(frozen=True)
class Provenance:
    """Where and with what a record was made. No paths, host or user names."""

    gpu: str
    date: str  # ISO 8601, UTC
    compute_capability: str | None = None
    device_index: int | None = None  # the GPU's index on its machine (None in format 1)
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    # The per-SM limits that decide theoretical occupancy (metrics.occupancy).
    max_threads_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    registers_per_sm: int | None = None
    smem_per_sm_bytes: int | None = None
    smem_per_block_optin_bytes: int | None = None
    warp_size: int | None = None
    memory_bus_bits: int | None = None
    memory_clock_khz: int | None = None
    sm_clock_khz: int | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    sm_clock_at_start_mhz: int | None = None
    power_limit_w: float | None = None
    driver: str | None = None
    cuda_driver_api: str | None = None
    nvcc: str | None = None
    pycuda: str | None = None
    numpy: str | None = None
    torch: str | None = None
    triton: str | None = None
    cuda_tile: str | None = None
    cublas: str | None = None
    python: str | None = None
    ncu: str | None = None  # Nsight Compute's version, where the record has a profile pass
    git_commit: str | None = None


@dataclass(frozen=True)
class MachineKey:
    """What a record's CUDA kernels compiled to (``labnotebook/results/machine.py``): where only CUDA
    files changed since, a record whose kernels compile to the same machine code is fresh."""

    nvcc: str  # the compiler's version and build ("13.0.88 cuda_13.0.r13.0/compiler.36424714_0")
    arch: str  # the GPU's architecture ("sm_90"); a kernel's own -arch= option overrides it
    cubins: dict[str, str]  # each kernel file's path in the key -> its normalised cubin's hash


@dataclass
class Record:
    """One experiment's run on one GPU: the contents of ``results/<experiment>/<gpu>.json``
    (or of ``<gpu>.failure.json``, which adds ``error`` and ``failed_at``)."""

    experiment: str
    title: str
    gpu: str
    provenance: Provenance | None  # None only in a failure record of a run that never started
    rows: list[Row]
    status: Literal["ok", "failed"]
    ceiling: Ceiling | None = None
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what made the run fail, one line each
    # Seconds of wall time from the start of the timed run to the end of the last pass over it
    # (sanitizer, profile); None before format 5. ``phases_s`` splits it by ``REFRESH_PHASES``: the
    # phases add up to it but for the waits between passes (on a node of several GPUs the two
    # passes may run side by side, on different GPUs, and then add up to more).
    wall_s: float | None = None
    phases_s: dict[str, float] = field(default_factory=dict)
    # What it was measured from (labnotebook/results/keys.py): each file of its key -> that file's hash,
    # and their digest, which is what freshness compares. ``sources`` is empty before format 4.
    source_hash: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    key_rule: Literal["text", "meaning"] = "meaning"  # how ``sources`` were hashed (keys.RULE)
    machine: MachineKey | None = None  # None: no nvcc where it was made, or a migrated file
    # {kernel: {tool: Verdict}}; None when the run had no compute-sanitizer pass.
    sanitizer: dict[str, dict[str, Verdict]] | None = None
    peak_host_bytes: int | None = None  # the worker's peak resident memory
    profile: ProfilePass | None = None  # None when the run had no profile pass
    error: str | None = None  # failure records: why the run failed
    failed_at: str | None = None  # failure records: when
    part: Part = "main"  # the pass that made it (``PARTS``)

    def row(self, name: str, case: str) -> Row | None:
        return next((r for r in self.rows if r.name == name and r.case == case), None)

    def to_json(self) -> dict:
        return {**_plain(self), "format": FORMAT}

    @classmethod
    def from_json(cls, data: dict, where: str = "a results file") -> "Record":
        """Build a Record from a file's contents of any known format version."""
        try:
            return _record(migrate(data, where))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ResultsError(f"{where} does not hold a valid results record ({type(e).__name__}: {e}); "
                               f"restore it with `git checkout` or re-run build_results.py --force") from e


# -- reading --------------------------------------------------------------------------------

def _build(cls, data: dict, **nested):
    """``cls(**data)``, refusing keys the class does not define (a typo is an error, not a
    silently ignored field); ``nested`` converts named fields first."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    values = {k: (nested[k](v) if k in nested and v is not None else v) for k, v in data.items()}
    return cls(**values)


def row_from_json(data: dict) -> Row:
    row = _build(Row, data, time=lambda t: _build(Timing, t), check=lambda c: _build(Check, c),
                 launch=lambda s: LaunchShape(tuple(s["grid"]), tuple(s["block"]), s.get("shared_bytes", 0)))
    if row.kind not in KINDS or row.status not in STATUSES:
        raise ValueError(f"row {row.name!r} at {row.case!r} has kind {row.kind!r}, status {row.status!r}")
    return row


def _record(data: dict) -> Record:
    data = {k: v for k, v in data.items() if k != "format"}
    if data.get("part", "main") not in PARTS:
        raise ValueError(f"part {data['part']!r} is none of {', '.join(PARTS)}")
    return _build(
        Record, data,
        provenance=lambda p: _build(Provenance, p),
        rows=lambda rows: [row_from_json(r) for r in rows],
        ceiling=lambda c: _build(Ceiling, c),
        kernels=lambda ks: {n: _build(KernelInfo, k, resources=lambda r: _build(Resources, r))
                            for n, k in ks.items()},
        sanitizer=lambda s: {k: {t: _build(Verdict, v) for t, v in tools.items()} for k, tools in s.items()},
        profile=profile_from_json,
        machine=lambda m: _build(MachineKey, m),
    )


def profile_from_json(data: dict) -> ProfilePass:
    def one(p: dict) -> Profile:
        return _build(Profile, p, launches=lambda ls: [_build(KernelProfile, k) for k in ls])
    return _build(ProfilePass, data, profiles=lambda ps: {n: one(p) for n, p in ps.items()})


# -- writing ----------------------------------------------------------------------------------

def _plain(value):
    """Dataclasses as dictionaries, tuples as lists; optional fields left at their default
    (None, False) are left out of rows, so files stay small and diffs readable."""
    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if isinstance(value, Row) and f.default is not dataclasses.MISSING and v == f.default:
                continue
            out[f.name] = _plain(v)
        return out
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- migrations -------------------------------------------------------------------------------

def _v1_to_v2(data: dict) -> dict:
    """Format 1 recorded no bound ratio, device index, verification time or peak memory, and
    named a kernel's language only for Python-DSL kernels."""
    for row in data.get("rows") or []:
        check = row.get("check")
        if check is not None:
            # Recoverable where the bound does not depend on the reference: exact rows, and
            # absolute-only tolerances. Elsewhere unknown, and the site shows the raw errors.
            if check["max_abs_err"] == 0:
                check["bound_ratio"] = 0.0
            elif check.get("rtol") == 0 and check.get("atol", 0) > 0:
                check["bound_ratio"] = check["max_abs_err"] / check["atol"]
            else:
                check["bound_ratio"] = None
    for info in (data.get("kernels") or {}).values():
        info.setdefault("language", "cuda")
    if data.get("provenance") is not None:
        data["provenance"].setdefault("device_index", None)
    return data


def _v2_to_v3(data: dict) -> dict:
    """Format 3 only added fields (the profile pass, the ncu version), absent meaning none."""
    return data


def _v3_to_v4(data: dict) -> dict:
    """Format 4 only added the per-file hashes of a key (absent: not recorded). Its digest is
    computed otherwise than format 3's source hash, so a file of format 3 reads as stale."""
    return data


def _v4_to_v5(data: dict) -> dict:
    """Format 5 records the whole refresh's wall time and its phases. Before it, only the timed
    worker's time was kept; it stays, as that one phase, and the whole is unknown."""
    duration = data.pop("duration_s", None)
    data["wall_s"] = None
    data["phases_s"] = {"timed run": duration} if duration is not None else {}
    return data


def _v5_to_v6(data: dict) -> dict:
    """Format 6 names the pass that made a record; every earlier one was the only pass."""
    data["part"] = "main"
    return data


def _v6_to_v7(data: dict) -> dict:
    """Format 7 hashes a key's files by their meaning and records machine code; an older file's
    hashes are of every file's bytes, and it has no machine code on record."""
    data["key_rule"] = "text"
    return data


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7}


def version_of(data: dict) -> int | None:
    fmt = data.get("format") if isinstance(data, dict) else None
    name, _, number = str(fmt).partition("/")
    return int(number) if name == NAME and number.isdigit() else None


def migrate(data: dict, where: str = "a results file") -> dict:
    """Bring a file's contents of any known format up to ``VERSION``."""
    version = version_of(data)
    if version is None or version > VERSION:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        newer = " (newer than this notebook: update your checkout)" if version else ""
        raise ResultsError(f"{where} has format {found!r}{newer}; this notebook reads {NAME}/1 to {FORMAT}; "
                           "re-run build_results.py --force to rewrite it")
    while version < VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return data
