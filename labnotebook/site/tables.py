"""Markdown for results: tables of rows, the provenance under them, the compiler's report.

Table builders take typed rows through a ``View`` and a ``note`` callback: a row that failed is
shown as failed in its cell *and* noted, so the macro around the table marks it and warns.
"""

from __future__ import annotations

import itertools
import re
from typing import Callable

from ..results import metrics, noise
from ..results.format import Record, Row
from ..results.rows import CHECKED, KernelRow
from . import fmt
from .fmt import cell
from .views import Problem, View

Note = Callable[[Problem], None]
STATUS_WORDS = {"failed": "✗ failed", "xfail": "✗ expected failure", "skipped": "– skipped"}


def short(gpu: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``, ``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``, for
    column headings: the model, without the maker, the brand, the memory or the form factor."""
    words = re.split(r"[ -]+", gpu.removeprefix("NVIDIA ").strip()) or [gpu]
    words = words[1:] if words[0] in ("GeForce", "Tesla", "Quadro") and len(words) > 1 else words
    model = list(itertools.takewhile(lambda w: not re.search(r"\dGB|HBM|PCIe|SXM|NVL", w), words))
    return " ".join(model) or words[0]


def label(row: Row) -> str:
    if row.kind == "transfer":
        return {"h2d": "host → device copy", "d2h": "device → host copy"}.get(row.name, row.name)
    if row.kind == "baseline":
        return f"{row.name} ({'CPU' if row.device == 'cpu' else 'GPU'})"
    return f"`{row.name}`"


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def indent(text: str) -> str:
    """Text as the body of an admonition or a collapsible box: four spaces before each line."""
    return "\n".join("    " + line if line else line for line in text.splitlines())


def note_failure(view: View, row: Row, note: Note) -> None:
    """A row that failed (not as declared) is a problem wherever a table shows it."""
    if row.status == "failed":
        note(view.failure(row))


def verified(row: Row) -> str:
    if row.status == "skipped":  # a kernel that does not handle this case says why, on hover
        return f'<abbr title="{cell(row.error or "")}">– skipped</abbr>'
    if row.status != "ok":
        return f"{STATUS_WORDS[row.status]}: {cell(row.error or '')}"
    return f"✓ {fmt.error(row.check)}" if isinstance(row, CHECKED) and row.check else "–"


def results_table(view: View, note: Note, cases: list[str] | None = None, names: list[str] | None = None,
                  baseline: str | None = None, percent: bool = False) -> str:
    """Kernel, case, median with spread, throughput, % of copy, comparison, verification.
    With ``percent`` the comparison is "% of <baseline>" (a library's speed) and the copy
    column is left out (compute-bound rows)."""
    record = view.require()
    cases = cases or view.cases()
    # Copies are not kernels: end_to_end_table shows them beside the kernel they serve.
    names = names or [n for n in view.names() if n not in ("h2d", "d2h")]
    # The GPU heads the names' column: tables of two GPUs can follow each other.
    head = [f"on the {short(view.gpu)}", "case", "median (p10–p90)", "throughput"] + ([] if percent else ["% of copy"])
    if baseline:
        head.append(f"% of {baseline}" if percent else f"vs {baseline}")
    head.append("verified: worst error ÷ its bound")
    lines = []
    for case in cases:
        for name in names:
            row = view.row(name, case)
            note_failure(view, row, note)
            cells = [label(row), fmt.case(case)]
            if row.ok and row.time:
                value, unit = metrics.throughput(row)
                pct = metrics.pct_of_ceiling(row, record)
                cells += [f"{fmt.duration(row.time.median_ms)}<br><small>{fmt.spread(row.time)}</small>",
                          fmt.rate(value, unit) if value else "–"]
                if not percent:
                    cells.append(fmt.percent(pct) if pct else "–")
                if baseline:
                    base = record.row(baseline, case)
                    if base is None:  # a misspelt baseline must not pass as "–"
                        note(Problem("absent", f"{view.experiment} has no {baseline!r} at {case} on {view.gpu}",
                                     view.experiment, view.gpu))
                    elif base.status == "failed":
                        note_failure(view, base, note)
                    cells.append(_versus(view, row, base, percent))
            else:
                cells += ["–"] * (len(head) - 3)
            cells.append(verified(row))
            lines.append(cells)
    return table(head, lines)


def _versus(view: View, row: Row, base: Row | None, percent: bool) -> str:
    if base is None or base.name == row.name or not (row.time and base.time):
        return "–"
    c = noise.compare_times(row.time, base.time)
    if not percent:
        return fmt.compared(c, "", ref(view, row), ref(view, base))
    return fmt.percent(100 * c.ratio) + (" (within the spread)" if c.level else "")


def ref(view: View, *rows: Row) -> str:
    """Rows of one case, as ``fmt.compared`` marks them (several: their times added)."""
    return f"{view.experiment}|{view.gpu}|{rows[0].case}|{'+'.join(r.name for r in rows)}"


def end_to_end_table(view: View, kernel: str, cpu: str, cases: list[str]) -> str:
    """CPU against GPU twice: the kernel alone, and the kernel with its copies in and out."""
    head = ["case", f"{cpu} (CPU)", f"`{kernel}`", "host → device", "device → host",
            "GPU with copies", "GPU, kernel only", "GPU, with copies"]
    lines = []
    for case in cases:
        rows = [view.timed(n, case) for n in (cpu, kernel, "h2d", "d2h")]
        c, k, h2d, d2h = (noise.Spread.of(r.time) for r in rows)
        total = k + h2d + d2h
        lines.append([fmt.case(case), fmt.duration(c.median), fmt.duration(k.median), fmt.duration(h2d.median),
                      fmt.duration(d2h.median), fmt.duration(total.median),
                      fmt.compared(noise.compare(k, c), cpu, ref(view, rows[1]), ref(view, rows[0])),
                      fmt.compared(noise.compare(total, c), cpu, ref(view, *rows[1:]), ref(view, rows[0]))])
    return table(head, lines) + caption([view])


def provenance_line(record: Record) -> str:
    """GPU, date and commit of a record: what every number on the site is traced to."""
    return f"{cell(record.gpu)}, {when(record)}"


def when(record: Record) -> str:
    """The date and commit a record was measured at: "2026-11-23, commit `bf2db1e2c9`"."""
    p = record.provenance
    return dated(p.date, p.git_commit) if p else "?"


def dated(date: str, commit: str | None) -> str:
    """A date and the commit it goes with, as a caption says them."""
    return f"{date[:10]}{f', commit `{commit[:10]}`' if commit else ''}"


def caption(views: list[View]) -> str:
    """The one line under a table that has no provenance box: where, when, at which commit."""
    parts = [provenance_line(v.record) for v in views if v.record]
    return (f"\n\n*Measured on {'; '.join(parts)}. Every timed row was verified against the "
            "float64 reference first.*\n")


def gpu_table(views: list[View], case: str, names: list[str], note: Note) -> str:
    """The same rows on several GPUs side by side: median, throughput and % of each GPU's ceiling."""
    head = [f"at {cell(fmt.case(case))}",  # so that two such tables in a row say which case each is
            *(f"{short(v.gpu)} {what}" for v in views for what in ("median", "throughput", "% of copy"))]
    lines = []
    for name in names:
        cells, shown = [], None
        for v in views:
            try:
                row = v.timed(name, case)
            except Problem as p:
                note(p)
                cells += [f'<span class="nb-problem" title="{cell(p)}">⚠ {p.kind}</span>', "–", "–"]
                continue
            shown = shown or row
            value, unit = metrics.throughput(row)
            pct = metrics.pct_of_ceiling(row, v.record)
            cells += [fmt.duration(row.time.median_ms), fmt.rate(value, unit) if value else "–",
                      fmt.percent(pct) if pct else "–"]
        lines.append([label(shown) if shown else f"`{name}`", *cells])
    # A GEMM moves too few bytes for its time to be a share of the copy bandwidth: a column of
    # dashes says nothing, so it goes.
    keep = [i for i, h in enumerate(head) if not h.endswith("% of copy") or any(line[i] != "–" for line in lines)]
    return table([head[i] for i in keep], [[line[i] for i in keep] for line in lines]) + caption(views)


def sanitizer_verdict(tools: dict) -> str:
    """One kernel's compute-sanitizer cell: what each tool found, or that it found nothing; a
    tool with nothing to check in this kernel (``Verdict.checked``) says so apart."""
    if not tools:
        return "not run"
    found = [f"✗ {tool}: {v.errors}: {cell(v.first)}" for tool, v in tools.items() if v.errors != 0]
    if found:
        return "; ".join(found)
    clean = [tool for tool, v in tools.items() if v.checked]
    unchecked = [f'<abbr title="{cell(v.first)}">{tool}: not applicable</abbr>' for tool, v in tools.items()
                 if not v.checked]
    return "; ".join(([f"✓ {', '.join(clean)} clean"] if clean else []) + unchecked)


def kernel_report(view: View) -> str:
    """Per kernel: what the compiler gave it, the occupancy that allows, and the sanitizers' verdict."""
    record = view.require()
    sanitizer = record.sanitizer or {}
    head = ["kernel", "registers", "shared memory", "spills", "block", "theoretical occupancy", "compute-sanitizer"]
    lines = []
    for name in sorted(record.kernels, key=fmt.rung_order):
        info, tools = record.kernels[name], sanitizer.get(name, {})
        verdict = sanitizer_verdict(tools)
        launched = next((r.launch for r in record.rows if isinstance(r, KernelRow) and r.name == name and r.launch), None)
        if info.resources is None or launched is None:  # Triton, cuTile: compiled at run time by their own compiler
            lines.append([f"`{name}`", "chosen by its compiler at run time", "–", "–", "–", "–", verdict])
            continue
        res = info.resources
        threads = 1
        for b in launched.block:
            threads *= b
        occ, limiter = metrics.occupancy(res, threads, launched.shared_bytes, record.provenance)
        spills = res.spill_store_bytes + res.spill_load_bytes
        lines.append([f"`{name}`", str(res.registers), f"{res.smem_bytes + launched.shared_bytes:,} B",
                      "none" if spills == 0 else f"{spills} B", "×".join(map(str, launched.block)),
                      f"{occ:.0%} ({limiter})", verdict])
    out = table(head, lines)
    if not sanitizer:
        out += "\n\nThese results were recorded without a compute-sanitizer pass."
    return out + caption([view])


def checks_table(view: View, note: Note) -> str:
    """The sizes and inputs that were verified but not timed: one row per case, one narrow column
    per kernel or baseline (its name set vertically, so a dozen fit), each cell what happened."""
    timed = set(view.cases())
    rows = [r for r in view.rows(timed=False) if r.case not in timed]
    large = large_pass(view, note)
    if not rows:
        return large
    names = list(dict.fromkeys(r.name for r in rows))
    mark = {"ok": "✓", "failed": "✗", "xfail": "✗ expected", "skipped": "–"}
    head = ["case"] + [f'<span class="nb-vertical">{cell(n)}</span>' for n in names]
    lines, notes = [], {}
    for case in dict.fromkeys(r.case for r in rows):
        by_name = {r.name: r for r in rows if r.case == case}
        cells = []
        for n in names:
            r = by_name.get(n)
            cells.append(f'<abbr title="{cell(r.error)}">{mark[r.status]}</abbr>' if r and r.error
                         else mark[r.status] if r else "")
            if r:
                note_failure(view, r, note)
                if r.status != "ok":
                    notes.setdefault((n, r.status), {}).setdefault(r.error or "", []).append(case)
        lines.append([cell(fmt.case(case)), *cells])
    words = {"failed": "failed", "xfail": "failed as declared", "skipped": "skipped"}
    items = []
    for (n, status), errors in notes.items():
        where = "; ".join(f"at {', '.join(cell(fmt.case(c)) for c in cases)}: {fmt.superscripts(cell(error))}"
                          for error, cases in errors.items())
        items.append(f"- `{n}` {words[status]} {where}")
    return (f'<div class="nb-checks" markdown>\n\n{table(head, lines)}\n\n</div>\n\n' + "\n".join(items) + "\n"
            + ("\n" + large if large else ""))


def large_pass(view: View, note: Note) -> str:
    """Which cases ran in the large pass, and when (or that they did not), for a view that has one."""
    if view.large is None:
        return ""
    problem = view.large_problem()
    if problem is not None:
        note(problem)
    s, gpu = view.large, cell(view.gpu)
    cases = ", ".join(cell(fmt.case(c)) for c in view.large_cases)
    record = s.record
    date = record.provenance.date[:10] if record is not None and record.provenance else "?"
    one = len(view.large_cases) == 1
    if s.state == "fresh" and record.part == "main":  # a record made before the large pass
        when = f"on {gpu} {'it' if one else 'they'} ran with the others on {date}"
    elif s.state == "fresh":
        when = f"on {gpu} {'it' if one else 'they'} ran on {date}" + (f", in {fmt.sig(record.wall_s, 2)} s" if record.wall_s else "")
    elif s.state == "stale":
        when = f"what is shown for {gpu} ran on {date} and is stale"
    elif s.state == "failed":
        when = f"on {gpu} its last run failed" + (f"; what is shown ran on {date}" if record else "")
    elif s.state == "missing":
        when = f"on {gpu} none are on record"
    else:
        when = f"on {gpu} its results file cannot be read"
    return (f"The {'case' if one else 'cases'} of {fmt.superscripts('2^31')} elements and more "
            f"({cases}) {'runs' if one else 'run'} in a pass of {'its' if one else 'their'} own, `{s.command}`, which a default refresh leaves out: {when}.\n")


def provenance(view: View) -> str:
    """A box naming the GPU, date, toolchain, commit and freshness of the shown results."""
    record = view.require()
    p = record.provenance
    parts = [p.date[:10], f"compute capability {p.compute_capability}", f"{p.sm_count} SMs",
             f"driver {p.driver}", f"CUDA {p.cuda_driver_api} (nvcc {p.nvcc})", f"PyCUDA {p.pycuda}",
             f"NumPy {p.numpy}"]
    if p.torch:
        parts.append(f"PyTorch {p.torch}")
    if p.git_commit:
        parts.append(f"commit `{p.git_commit[:10]}`")
    parts.append(f"sources `{record.source_hash}` ({view.state})")
    if record.ceiling and record.ceiling.gbs:
        parts.append(f"copy ceiling {fmt.rate(record.ceiling.gbs, 'GB/s')} measured in the same run")
    if refreshed := refresh_time(record):
        parts.append(refreshed)
    return f'!!! info "Measured on {cell(view.gpu)}"\n    ' + " · ".join(parts) + "\n"


def refresh_time(record) -> str | None:
    """What the record's refresh took, in words: the whole of it, or (files of format 4 and older)
    the timed run alone; None where neither was recorded."""
    if record.wall_s is not None:
        return f"refreshed in {fmt.sig(record.wall_s, 2)} s"
    run = record.phases_s.get("timed run")
    return f"ran in {fmt.sig(run, 2)} s" if run is not None else None


def phase_table(view: View, case: str) -> str:
    """Every phase of a whole-program run: median, spread, share of the total."""
    timed = rows = view.phases(case)
    total = sum(metrics.median_ms(r) for r in timed)
    lines = [[r.name, f"{fmt.duration(r.time.median_ms)}<br><small>{fmt.spread(r.time)}</small>",
              fmt.percent(100 * r.time.median_ms / total)] for r in timed]
    lines.append(["**total**", f"**{fmt.duration(total)}**", ""])
    nvtx = "emitted" if rows[0].nvtx else "not emitted (no nvtx module)"
    return (table(["phase", "median (p10–p90)", "share of the whole"], lines)
            + f"\n\n*✓ output verified in each of {rows[0].fresh_processes} fresh processes; NVTX ranges {nvtx}.*"
            + caption([view]))


def _fma(record: Record) -> str:
    value = metrics.fma_tflops(record)
    return f"**{fmt.rate(value, 'TFLOP/s')}**" if value else "not measured in this run"


def gpu_facts(records: list[Record]) -> str:
    """The GPUs themselves, as their drivers report them at run time, beside what they measured."""
    def theoretical_gbs(p) -> float:
        return 2 * p.memory_clock_khz * 1e3 * p.memory_bus_bits / 8 / 1e9  # two transfers a clock
    facts = [
        ("compute capability", lambda p, r: p.compute_capability),
        ("streaming multiprocessors (SMs)", lambda p, r: str(p.sm_count)),
        ("SM clock, maximum", lambda p, r: f"{p.max_sm_clock_mhz:,} MHz"),
        ("memory", lambda p, r: f"{p.memory_bytes / 2**30:.0f} GiB"),
        ("memory bus", lambda p, r: f"{p.memory_bus_bits:,} bits"),
        ("memory clock", lambda p, r: f"{p.memory_clock_khz / 1e3:,.0f} MHz"),
        ("theoretical bandwidth (2 × clock × bus)", lambda p, r: fmt.rate(theoretical_gbs(p), "GB/s")),
        ("**measured** device-to-device copy", lambda p, r: f"**{fmt.rate(r.ceiling.gbs, 'GB/s')}**"),
        ("measured ÷ theoretical", lambda p, r: fmt.percent(100 * r.ceiling.gbs / theoretical_gbs(p))),
        ("**measured** FP32 fused multiply-adds", lambda p, r: _fma(r)),
        ("L2 cache", lambda p, r: f"{p.l2_bytes / 2**20:.0f} MiB"),
        ("shared memory per SM", lambda p, r: f"{p.smem_per_sm_bytes // 1024} KiB"),
        ("shared memory per block (opt-in)", lambda p, r: f"{p.smem_per_block_optin_bytes // 1024} KiB"),
        ("registers per SM", lambda p, r: f"{p.registers_per_sm:,} (32-bit)"),
        ("threads per SM, at most", lambda p, r: f"{p.max_threads_per_sm:,}"),
        ("blocks per SM, at most", lambda p, r: str(p.max_blocks_per_sm)),
        ("warp size", lambda p, r: str(p.warp_size)),
        ("power limit", lambda p, r: f"{p.power_limit_w:.0f} W" if p.power_limit_w else "–"),
        ("driver · CUDA", lambda p, r: f"{p.driver} · {p.cuda_driver_api}"),
        ("read on", lambda p, r: p.date[:10]),
        ("commit", lambda p, r: f"`{p.git_commit[:10]}`" if p.git_commit else "–"),
    ]
    def shown(get, r: Record) -> str:  # a fact an older or a reader's file does not hold: a dash
        try:
            return get(r.provenance, r)
        except (TypeError, AttributeError, ZeroDivisionError):
            return "–"
    return table(["", *(cell(r.gpu) for r in records)],
                 [[name, *(shown(get, r) for r in records)] for name, get in facts])
