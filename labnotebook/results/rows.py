"""A record's rows: one thing measured at one case each, of one of five kinds (a kernel, a
baseline, a host-device copy, a phase of a whole program, a ceiling of the machine). The kind
decides the fields: ``Row`` holds those every kind has, each kind's subclass the ones it uses.
Rows are frozen; a changed row is a new one (``dataclasses.replace``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Kind = Literal["kernel", "baseline", "transfer", "phase", "ceiling"]
# ok: verified (and timed, for a timed case); failed: wrong answer or an error, with ``error``;
# xfail: failed as its declaration says it must; skipped: not run, with the reason in ``error``.
Status = Literal["ok", "failed", "xfail", "skipped"]
STATUSES = ("ok", "failed", "xfail", "skipped")


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


@dataclass(frozen=True)
class Row:
    """One thing measured at one case: the fields every kind has. Each kind is a subclass
    (``ROW_KINDS``) holding the fields it uses; ``kind`` names it in the file."""

    kind: ClassVar[Kind]
    name: str  # kernel name (the .cu file's stem), baseline name, "h2d"/"d2h", phase name
    case: str  # the case's display name, unique within the experiment
    params: dict[str, Any]  # the case's parameters (sizes, ...)
    status: Status
    timed: bool  # a timed case (False: an edge or large case, verified only)
    error: str | None = None  # why it failed or was skipped
    time: Timing | None = None  # set for every timed row that verified

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median_ms(self) -> float | None:
        return self.time.median_ms if self.time else None

    @property
    def on_cpu(self) -> bool:
        """Ran on the host, not the GPU: a CPU baseline (no GPU kernel, no share of the GPU's memory)."""
        return False


@dataclass(frozen=True)
class WorkRow(Row):
    """A row whose work the case sizes: what a perfect kernel would move and compute."""

    bytes: int | None = None  # bytes a perfect kernel moves at this case (read + written)
    flops: int | None = None  # floating-point operations at this case
    intensity: float | None = None  # flops per byte of the least traffic (the roofline's x)


@dataclass(frozen=True)
class RunRow(WorkRow):
    """A kernel or a baseline: run once with its outputs verified, then timed."""

    check: Check | None = None  # the worst output's comparison, where outputs were verified
    verify_s: float | None = None  # seconds spent computing the reference and comparing
    digest: str | None = None  # of the output bytes (run/outputs.py): equal digests, identical outputs
    unavailable: bool = False  # skipped because a module or GPU feature is missing here
    missing_module: str | None = None  # that module, so the build re-runs once it is installed


@dataclass(frozen=True)
class KernelRow(RunRow):
    """A kernel of the experiment's ladder (CUDA or Python-DSL)."""

    kind: ClassVar[Kind] = "kernel"
    launch: LaunchShape | None = None  # CUDA kernels


@dataclass(frozen=True)
class BaselineRow(RunRow):
    """A library or CPU baseline."""

    kind: ClassVar[Kind] = "baseline"
    device: Literal["gpu", "cpu"] | None = None  # where it ran (how it was timed)

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"


@dataclass(frozen=True)
class TransferRow(WorkRow):
    """A host<->device copy of the case's inputs ("h2d") or outputs ("d2h")."""

    kind: ClassVar[Kind] = "transfer"
    memory: str | None = None  # the host memory it copies from ("pageable")


@dataclass(frozen=True)
class PhaseRow(Row):
    """A phase of a whole program, timed over fresh processes, its outputs verified in each."""

    kind: ClassVar[Kind] = "phase"
    check: Check | None = None  # the worst output's comparison (a failing process's, if any)
    fresh_processes: int | None = None  # how many fresh processes the medians are over
    nvtx: bool | None = None  # whether NVTX ranges were emitted


@dataclass(frozen=True)
class CeilingRow(WorkRow):
    """A ceiling of the machine: the copy bandwidth or the FP32 FMA rate."""

    kind: ClassVar[Kind] = "ceiling"


ROW_KINDS: dict[str, type[Row]] = {cls.kind: cls for cls in (KernelRow, BaselineRow, TransferRow, PhaseRow, CeilingRow)}
CHECKED = (RunRow, PhaseRow)  # the kinds whose outputs are verified: they have a ``check``
