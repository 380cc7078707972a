"""What Nsight Compute saw: a table per entry, the sentences that explain each rung's gain by
its profile, and each kernel's limiter. All drawn from ``Record.profile``; a record without a
profile pass, a profile older than the profiler pass, or a CUDA kernel without a profile, is a
Problem: marked where the profile would be, and only noted (a profile explains the numbers, it
does not make them)."""

from __future__ import annotations

from ..results.format import KernelProfile, Profile, Record
from . import fmt
from .fmt import cell
from .views import Problem, View, run_command
from .tables import Note, dated, table, when

# ncu's warp-stall reasons in words a reader of this notebook knows (Nsight Compute's
# "Warp State Statistics" section describes each).
STALLS = {
    "long_scoreboard": "waiting for global memory",
    "short_scoreboard": "waiting for shared memory or a special function",
    "barrier": "waiting at a barrier",
    "membar": "waiting at a memory fence",
    "mio_throttle": "MIO queue full (shared memory, shuffles, special functions)",
    "lg_throttle": "global-memory instruction queue full",
    "tex_throttle": "texture unit busy",
    "math_pipe_throttle": "math pipe busy",
    "wait": "a fixed-latency dependency",
    "not_selected": "ready, another warp issued",
    "no_instruction": "no instruction fetched",
    "branch_resolving": "resolving a branch",
    "dispatch_stall": "dispatch stall",
    "drain": "draining stores at exit",
    "imc_miss": "constant-cache miss",
    "sleeping": "sleeping",
    "misc": "other",
}
LIMITERS = {"memory": "memory-bound", "compute": "compute-bound", "latency": "latency-bound"}
UNITS = {"L1": "L1/shared memory", "L2": "L2", "DRAM": "DRAM"}


def stall(reason: str) -> str:
    return STALLS.get(reason, reason.replace("_", " "))


def require_pass(view: View) -> Record:
    """The record, with a profile pass that ran; a Problem naming the command otherwise."""
    record = view.require()
    p = record.profile
    where = f"{view.experiment} on {view.gpu}"
    if p is None:
        raise Problem("unprofiled", f"{where} has no Nsight Compute profile on record: run "
                                f"`{run_command(view.experiment)} --force` on a GPU with ncu", view.experiment)
    if p.status != "ok":
        raise Problem("unprofiled", f"{where}: the profile pass {p.status}: {p.reason}", view.experiment)
    if view.state == "fresh" and view.stored.profile_state == "stale":  # a stale record says so itself
        raise Problem("unprofiled", f"{where}: the profile is stale (the profiler pass changed since it was "
                                    f"taken): run `{run_command(view.experiment)} --force`", view.experiment)
    return record


def profile_of(view: View, name: str) -> Profile:
    """``name``'s profile, or a Problem saying why there is none."""
    record = require_pass(view)
    profile = record.profile.profiles.get(name)
    if profile is None or profile.main is None:
        why = profile.error if profile else "not profiled"
        raise Problem("unprofiled", f"{view.experiment}/{name} on {view.gpu} has no profile: {why}", view.experiment)
    return profile


def _pct(x: float | None) -> str:
    return fmt.percent(x) if x is not None else "–"


def _stalls(k: KernelProfile, top: int = 2) -> str:
    return "; ".join(f"{stall(r)} {fmt.percent(100 * s)}" for r, s in k.by_share[:top]) or "–"


def limiter(k: KernelProfile, unit: bool = True) -> str:
    """"memory-bound on DRAM", "compute-bound", "latency-bound": a memory-bound kernel names the
    unit that bounds it where its profile recorded the units (unless ``unit`` is False)."""
    words = LIMITERS.get(k.limiter or "", "–")
    if unit and k.limiter == "memory" and k.memory_unit:
        words += f" on {UNITS[k.memory_unit]}"
    return words


def _memory(k: KernelProfile) -> str:
    """ncu's memory figure (the one the limiter is judged on) and, where it is known, the unit it
    comes from: "DRAM 85.1%"."""
    return f"{k.memory_unit} {_pct(k.memory_pct)}" if k.memory_unit else _pct(k.memory_pct)


def _change(label: str, x: float, y: float, unit: str = " of peak") -> str:
    """"DRAM throughput rises from 55.0% to 92.0% of peak"; a change of a point or less, within
    what two profiles of the same kernel differ by, "stays near"."""
    if abs(y - x) <= 1.0:
        return f"{label} stays near {fmt.percent(y)}{unit}"
    return f"{label} {'rises' if y > x else 'falls'} from {fmt.percent(x)} to {fmt.percent(y)}{unit}"


def profile_table(view: View, note: Note) -> str:
    """Where ncu says each kernel's and GPU baseline's time goes (limiter, time, DRAM, caches, SM),
    then what kept its warps waiting (occupancy, registers, stalls): two tables, so that each
    fits a page without scrolling."""
    record = require_pass(view)
    where = (["kernel", "case", "limiter", "time under ncu", "memory busy", "DRAM", "L1 / L2 hit", "SM busy"], [])
    warps = (["kernel", "occupancy (achieved / theoretical)", "registers", "warps mostly stalled on"], [])
    order = sorted(record.kernels, key=fmt.rung_order) + sorted(set(record.profile.profiles) - set(record.kernels),
                                                           key=fmt.rung_order)
    for name in order:
        p = record.profile.profiles.get(name)
        k = p.main if p else None
        if k is None:
            why = p.error if p else "not profiled"
            if name in record.kernels and record.kernels[name].language == "cuda":
                note(Problem("unprofiled", f"{view.experiment}/{name} on {view.gpu} has no profile: {why}", view.experiment))
            where[1].append([f"`{name}`", cell(fmt.case(p.case)) if p else "–", f"– {cell(why)}", *["–"] * 5])
            warps[1].append([f"`{name}`", *["–"] * 3])
            continue
        launches = f" ({len(p.launches)} kernels)" if len(p.launches) > 1 else ""
        where[1].append([
            f"`{name}`", cell(fmt.case(p.case)), f"**{limiter(k, unit=False)}**",  # the unit is in "memory busy"
            fmt.duration(p.duration_ns / 1e6) + launches if p.duration_ns else "–", _memory(k),
            f"{fmt.rate(k.dram_gbs, 'GB/s')} ({_pct(k.dram_pct)})" if k.dram_gbs is not None else _pct(k.dram_pct),
            f"{_pct(k.l1_hit_pct)} / {_pct(k.l2_hit_pct)}", _pct(k.sm_pct)])
        warps[1].append([f"`{name}`", f"{_pct(k.achieved_occupancy_pct)} / {_pct(k.theoretical_occupancy_pct)}",
                         str(k.registers) if k.registers is not None else "–", cell(_stalls(k))])
    version = record.provenance.ncu if record.provenance else None
    out = table(*where) + "\n\n" + table(*warps)
    out += (f"\n\n*Nsight Compute {version or ''}, one launch of each at the case shown, at the GPU's own clocks (not locked): "
            "its times are not the timed medians above. A library call that launches several kernels is "
            "described by its longest one. The limiter is ncu's speed-of-light rule: memory- or compute-bound "
            "by whichever is busier, latency-bound when neither reaches 60% of its peak. *Memory busy* is ncu's "
            "memory figure, the busiest memory unit as a share of its peak, named (L1 with shared memory, L2 or "
            "DRAM) where one of them gives that figure; *SM busy* the SMs' busiest pipe.*")
    # The profile may be younger than the results (it is redone alone when the profiler pass
    # changes): the caption says when it was taken, where its file says, and which results it explains.
    taken = f", {dated(record.profile.date, record.profile.git_commit)}" if record.profile.date else ""
    return out + f"\n\n*Profiled on {cell(record.gpu)}{taken}, for the results measured {when(record)}.*\n"


def gain(view: View, a: str, b: str) -> str:
    """A sentence on what changed, by the profile, from rung ``a`` to rung ``b``: the busiest
    memory unit (where it is not DRAM in both), DRAM throughput, occupancy, the busiest pipe and
    the leading stall, each direction word chosen by the data."""
    ka, kb = profile_of(view, a).main, profile_of(view, b).main
    parts = [_memory_change(ka, kb)] if _beyond_dram(ka, kb) else []
    for label, x, y, unit in (("DRAM throughput", ka.dram_pct, kb.dram_pct, " of peak"),
                              ("achieved occupancy", ka.achieved_occupancy_pct, kb.achieved_occupancy_pct, ""),
                              ("the SMs' busiest pipe", ka.sm_pct, kb.sm_pct, " of peak")):
        if x is not None and y is not None:
            parts.append(_change(label, x, y, unit))
    if ka.stalls and kb.stalls:
        (sa, share_a), (sb, share_b) = ka.by_share[0], kb.by_share[0]
        x, y = fmt.percent(100 * share_a), fmt.percent(100 * share_b)
        parts.append(f"the leading stall moves from {stall(sa)} ({x} of stalls) to {stall(sb)} ({y})" if sa != sb
                     else f"the leading stall is still {stall(sb)} ({x} of stalls, then {y})")
    la, lb = limiter(ka), limiter(kb)
    head = f"From `{a}` to `{b}`, both {lb}" if la == lb else f"From `{a}` ({la}) to `{b}` ({lb})"
    return head + (": " + "; ".join(parts) + "." if parts else ".")


def _beyond_dram(ka: KernelProfile, kb: KernelProfile) -> bool:
    """Whether both name their memory unit and it is not DRAM in both: otherwise the DRAM
    clause says it all."""
    units = [ka.memory_unit, kb.memory_unit]
    return all(units) and units != ["DRAM", "DRAM"]


def _memory_change(ka: KernelProfile, kb: KernelProfile) -> str:
    ua, ub = ka.memory_unit, kb.memory_unit
    if ua != ub:
        return (f"the busiest memory unit moves from {UNITS[ua]} ({fmt.percent(ka.memory_pct)} of peak) "
                f"to {UNITS[ub]} ({fmt.percent(kb.memory_pct)})")
    return _change(f"memory busy ({UNITS[ub]})", ka.memory_pct, kb.memory_pct)


def alone(view: View, name: str) -> str:
    """A sentence on a kernel profiled at a case no earlier rung was: where, and what limits it."""
    p = profile_of(view, name)
    k = p.main
    return (f"`{name}` is profiled at {fmt.case(p.case)}, the largest timed case it takes: {limiter(k)}, "
            f"memory busy {_memory(k)}, DRAM {_pct(k.dram_pct)} of peak, SM busy {_pct(k.sm_pct)}.")


def ladder(view: View, note: Note) -> str:
    """The gain sentences, each CUDA or Python-DSL kernel against the rung before it profiled at
    the same case; a rung profiled at a case of its own gets a sentence of its own."""
    record = require_pass(view)
    names = sorted((n for n in record.kernels if (p := record.profile.profiles.get(n)) and p.main is not None),
                   key=fmt.rung_order)
    case = {n: record.profile.profiles[n].case for n in names}
    lines = []
    for i, b in enumerate(names):
        if i == 0:
            continue
        a = next((a for a in reversed(names[:i]) if case[a] == case[b]), None)
        try:
            lines.append("- " + (gain(view, a, b) if a else alone(view, b)))
        except Problem as p:
            note(p)
    return "\n".join(lines)
