"""The results format: the one definition of what ``build_results.py`` writes and what the
store, ``--summary``, the site and the analysis notebook read.

A results file holds one ``Record``: an experiment's run on one GPU (or on several of one node,
its cases split between them: ``Record.split``), with its rows (a subclass of ``Row`` per
kind). Every field is documented where it is defined. Files carry ``FORMAT``; a file of an
older version is brought up to date on load (``migrations.py``), so a format change never needs
a GPU run, and one that only adds optional fields needs no migration: a new field is its line
here, its default, and a line in this history. Writing always uses the current version;
``codec.py`` reads and writes the JSON.

Format history:

1. The first format (rows as plain dictionaries).
2. ``Check.bound_ratio`` (how close a row came to failing), ``RunRow.verify_s`` (the cost of
   verification), ``Provenance.device_index`` (which GPU of a node ran it),
   ``Record.peak_host_bytes`` and ``KernelInfo.language`` for every kernel.
3. ``Record.profile``: the Nsight Compute pass (``ProfilePass``), ``Provenance.ncu`` and
   ``WorkRow.intensity`` (where the roofline places a row); the ceilings add an ``fp32 fma`` row.
4. Keys by what was measured (``labnotebook/results/keys.py``): ``Record.sources`` and
   ``ProfilePass.sources``, the hash of each file of the key; ``source_hash`` is now their digest,
   computed otherwise than format 3's source hash, so a file of format 3 reads as stale.
5. What the refresh cost: ``Record.wall_s`` (the whole of it, the sanitizer and profile passes
   included) and ``Record.phases_s`` (by ``REFRESH_PHASES``), in place of ``duration_s`` (the timed
   worker's time alone, which a migrated file keeps as ``phases_s["timed run"]``).
6. ``Record.part``: which pass made the record. The cases of 2^31 elements and more (``large_cases``)
   run in a pass of their own, ``build_results.py --large``, into ``<gpu>.large.json``; a
   file of format 5 or older is of the main pass (it may hold large cases' rows as well).
7. Keys by meaning (``keys.RULE``) and machine code: ``Record.key_rule`` and ``Record.machine``;
   an older file's hashes are of every file's bytes (``key_rule: "text"``).
8. ``ProfilePass.date`` and ``ProfilePass.git_commit``: when and at which commit a profile was taken.
9. ``Record.split``: a timed run split by cases over several GPUs of a node (``build_results.py
   --gpus``, ``labnotebook/build/split.py``), each part's GPU, cases, copy ceiling and wall time; a
   row's "% of copy ceiling" is of the ceiling of the GPU that ran it (``Record.ceiling_of``). None
   in older files: one run on one GPU, as ever. ``Record.sanitizer_s``: each compute-sanitizer
   job's seconds, by which the next build starts the longest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# A record's rows and their parts: their types are rows.py's (a subclass of Row per kind), and
# are read from here too, as the rest of the format is.
from .rows import Check, LaunchShape, Row, Timing  # noqa: F401

NAME = "labnotebook-results"
VERSION = 9
FORMAT = f"{NAME}/{VERSION}"

# Which pass made a record: "main" (the timed and edge cases, sanitized and profiled:
# ``build_results.py``) or "large" (the cases of 2^31 elements and more, verified only:
# ``build_results.py --large``). A default refresh is the main pass; the large one needs up to
# 24 GiB of GPU memory and several times the host's, and a minute per GPU.
Part = Literal["main", "large"]


@dataclass(frozen=True)
class Pass:
    """What sets one pass's records apart, for the code that files them, re-makes them and
    profiles them to look up rather than ask which pass it has."""

    name: Part
    suffix: str  # in its files' names, before ".json" (and ".failure.json"): "" or ".large"
    option: str | None  # the option of build_results.py that runs it
    profiled: bool  # its records get an Nsight Compute pass


PASSES = {p.name: p for p in (Pass("main", "", None, profiled=True),
                              Pass("large", ".large", "--large", profiled=False))}
PARTS = tuple(PASSES)

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
    # When it was taken (ISO 8601, UTC) and at which commit: a profile is redone alone when the
    # profiler pass changes, so it may be younger than the record. None before format 8.
    date: str | None = None
    git_commit: str | None = None


@dataclass(frozen=True)
class Ceiling:
    """The device-to-device copy bandwidth measured at the start of the run (read + written)."""

    gbs: float | None
    median_ms: float | None
    bytes: int | None


@dataclass(frozen=True)
class SplitPart:
    """One part of a timed run split by cases over several GPUs of a node (``Record.split``)."""

    device_index: int  # the GPU that ran it, as ``Provenance.device_index``
    cases: list[str]  # the main and edge cases it ran, in the declaration's order
    ceiling: Ceiling | None  # that GPU's copy ceiling, which its rows' "% of copy ceiling" is of
    wall_s: float  # its worker's wall time


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
    # passes may run side by side, on different GPUs, and then add up to more). Of a run split
    # over several GPUs (``split``), the timed run counts as its parts' wall times added up, and so
    # do its phases: the GPU-seconds it cost, as on one GPU, not the shorter time it took.
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
    # Each of that pass's jobs' seconds, by its name: a tool ("memcheck"), or racecheck and a
    # kernel ("racecheck 3_tiled"), which runs one job per kernel. None: no pass, or before format 9.
    sanitizer_s: dict[str, float] | None = None
    peak_host_bytes: int | None = None  # the worker's peak resident memory (the largest part's, where split)
    profile: ProfilePass | None = None  # None when the run had no profile pass
    error: str | None = None  # failure records: why the run failed
    failed_at: str | None = None  # failure records: when
    part: Part = "main"  # the pass that made it (``PARTS``)
    # The timed run's parts where it was split by cases over several GPUs, in the order of their
    # first cases; None: one run on one GPU (``provenance.device_index``). A split record's
    # ``provenance`` and ``ceiling`` are its first part's.
    split: list[SplitPart] | None = None

    def row(self, name: str, case: str) -> Row | None:
        return next((r for r in self.rows if r.name == name and r.case == case), None)

    def ceiling_of(self, row: Row) -> Ceiling | None:
        """The copy ceiling of the GPU that ran ``row``: its part's, where the run was split."""
        part = next((p for p in self.split or () if row.case in p.cases), None)
        return part.ceiling if part else self.ceiling

    def to_json(self) -> dict:
        from .codec import record_to_json  # which reads these types

        return record_to_json(self)

    @classmethod
    def from_json(cls, data: dict, where: str = "a results file") -> "Record":
        """Build a Record from a file's contents of any known format version."""
        from .codec import record_from_json  # which reads these types

        return record_from_json(data, where)
