"""Markdown for results: tables of rows, the provenance line, and boxes for problems."""

from __future__ import annotations

import html

from .. import metrics
from . import fmt
from .results import Problem, View

STATUS_WORDS = {"failed": "✗ failed", "xfail": "✗ expected failure", "skipped": "– skipped"}
PROBLEM_BOX = {"failed": ("failure", "Last run failed"), "stale": ("warning", "Stale results"),
               "missing": ("danger", "Missing results")}


def cell(text: str) -> str:
    """Escape anything captured from a program before it goes into a table cell."""
    return html.escape(str(text)).replace("|", "&#124;").replace("\n", " ")


def label(row: dict) -> str:
    if row["kind"] == "transfer":
        return {"h2d": "host → device copy", "d2h": "device → host copy"}[row["name"]]
    if row["kind"] == "baseline":
        return f"{row['name']} ({'CPU' if row.get('device') == 'cpu' else 'GPU'})"
    return f"`{row['name']}`"


def verified(row: dict) -> str:
    if row["status"] == "skipped":  # a kernel that does not handle this case says why, on hover
        return f'<abbr title="{cell(row.get("error", ""))}">– skipped</abbr>'
    if row["status"] != "ok":
        return f"{STATUS_WORDS[row['status']]}: {cell(row.get('error', ''))}"
    if "check" not in row:
        return "–"
    return f"✓ {fmt.error(row['check'])}"


def results_table(view: View, cases: list[str] | None = None, names: list[str] | None = None,
                  baseline: str | None = None, percent: bool = False) -> str:
    """Kernel, case, median with spread, throughput, % of ceiling, speedup, verification.
    With ``percent``, the comparison column says "% of <baseline>" (a library's speed) instead
    of a speed-up, and the copy-ceiling column is left out (compute-bound rows)."""
    record = view.shown
    if record is None:
        raise view.problems()[0]
    cases = cases or view.cases()
    # Copies are not kernels: end_to_end_table shows them beside the kernel they serve.
    names = names or [n for n in view.names() if n not in ("h2d", "d2h")]
    head = ["", "case", "median (p10–p90)", "throughput"] + ([] if percent else ["% of copy"])
    if baseline:
        head.append(f"% of {baseline}" if percent else f"× {baseline}")
    head.append("verified (max error)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in cases:
        by_name = {r["name"]: r for r in record["rows"] if r["case"] == case}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise Problem("missing", f"{view.experiment} has no {unknown} at case {case!r}")
        for name in names:
            row = by_name[name]
            cells = [label(row), cell(case)]
            if "time" in row and row["status"] == "ok":
                value, unit = metrics.throughput(row)
                pct = metrics.pct_of_ceiling(row, record)
                cells += [f'{fmt.duration(row["time"]["median_ms"])}<br><small>{fmt.spread(row)}</small>',
                          fmt.rate(value, unit) if value else "–"]
                if not percent:
                    cells.append(fmt.percent(pct) if pct else "–")
                if baseline:
                    s = metrics.speedup(row, by_name.get(baseline))
                    cells.append("–" if not s else fmt.percent(100 * s) if percent else fmt.times(s))
            else:
                cells += ["–"] * (len(head) - 3)
            cells.append(verified(row))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def end_to_end_table(view: View, kernel: str, cpu: str, cases: list[str]) -> str:
    """CPU against GPU twice: the kernel alone, and the kernel with its copies in and out."""
    head = ["case", f"{cpu} (CPU)", f"`{kernel}`", "host → device", "device → host",
            "GPU with copies", "GPU speed-up, kernel only", "GPU speed-up, with copies"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in cases:
        c, k = view.row(cpu, case), view.row(kernel, case)
        h2d, d2h = view.row("h2d", case), view.row("d2h", case)
        total = sum(metrics.median_ms(r) for r in (k, h2d, d2h))
        cpu_ms = metrics.median_ms(c)
        lines.append("| " + " | ".join([
            case, fmt.duration(cpu_ms), fmt.duration(metrics.median_ms(k)),
            fmt.duration(metrics.median_ms(h2d)), fmt.duration(metrics.median_ms(d2h)),
            fmt.duration(total), fmt.times(cpu_ms / metrics.median_ms(k)),
            fmt.times(cpu_ms / total)]) + " |")
    return "\n".join(lines) + caption([view])


def caption(views: list[View]) -> str:
    """The one line under a table that has no provenance box: where, when, and whether verified."""
    parts = [f"{cell(v.gpu)}, {v.shown['provenance']['date'][:10]}" for v in views if v.shown]
    return (f"\n\n*Measured on {'; '.join(parts)}. Every timed row was verified against the "
            "float64 reference first.*\n")


def gpu_table(views: list[View], case: str, names: list[str]) -> str:
    """The same rows on several GPUs side by side: median, throughput and % of each GPU's ceiling."""
    head = ["", *(f"{v.gpu}: {what}" for v in views for what in ("median", "throughput", "% of ceiling"))]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cells = []
        for v in views:
            try:
                row = v.row(name, case)
            except Problem as e:
                cells += [f"{STATUS_WORDS.get(e.kind, '–')}", "–", "–"]
                continue
            value, unit = metrics.throughput(row)
            pct = metrics.pct_of_ceiling(row, v.shown)
            cells += [fmt.duration(metrics.median_ms(row)), fmt.rate(value, unit) if value else "–",
                      fmt.percent(pct) if pct else "–"]
        label_row = next(r for v in views if v.shown for r in v.shown["rows"] if r["name"] == name)
        lines.append(f"| {label(label_row)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + caption(views)


def kernel_report(view: View) -> str:
    """Per kernel: what the compiler gave it, the occupancy that allows, and the sanitizers' verdict."""
    record = view.shown
    if record is None:
        raise view.problems()[0]
    sanitizer = record.get("sanitizer") or {}
    head = ["kernel", "registers", "shared memory", "spills", "block", "theoretical occupancy",
            "compute-sanitizer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, info in record["kernels"].items():
        tools = sanitizer.get(name, {})
        found = [f"✗ {tool}: {e['errors']}: {cell(e['first'])}" for tool, e in tools.items() if e["errors"] != 0]
        verdict = "; ".join(found) if found else f"✓ {', '.join(tools)} clean" if tools else "not run"
        if "resources" not in info:  # Triton or cuTile: compiled at run time by its own compiler
            lines.append(f"| `{name}` | " + " | ".join(["chosen by its compiler at run time"] + ["–"] * 4)
                         + f" | {verdict} |")
            continue
        res = info["resources"]
        launch = next(r["launch"] for r in record["rows"] if r["name"] == name and "launch" in r)
        threads = 1
        for b in launch["block"]:
            threads *= b
        occ, limiter = metrics.occupancy(res, threads, launch["shared_bytes"], record["provenance"])
        spills = res.get("spill_store_bytes", 0) + res.get("spill_load_bytes", 0)
        cells = [f"`{name}`", str(res["registers"]), f"{res.get('smem_bytes', 0) + launch['shared_bytes']:,} B",
                 "none" if spills == 0 else f"{spills} B", "×".join(map(str, launch["block"])),
                 f"{occ:.0%} ({limiter})", verdict]
        lines.append("| " + " | ".join(cells) + " |")
    if not sanitizer:
        lines.append("\nThese results were recorded without a compute-sanitizer pass.")
    return "\n".join(lines) + caption([view])


def checks_table(view: View) -> str:
    """The sizes and inputs that were verified but not timed: one row per case, one column per
    kernel or baseline, each cell what happened there."""
    timed = set(view.cases())
    rows = [r for r in (view.shown or {}).get("rows", []) if r["case"] not in timed]
    if not rows:
        return ""
    names = list(dict.fromkeys(r["name"] for r in rows))
    mark = {"ok": "✓", "failed": "✗ failed", "xfail": "✗ expected", "skipped": "–"}
    lines = ["| verified, not timed | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|" + "---|" * (len(names) + 1)]
    notes: dict[tuple[str, str], dict[str, list[str]]] = {}
    for case in dict.fromkeys(r["case"] for r in rows):
        by_name = {r["name"]: r for r in rows if r["case"] == case}
        cells = []
        for n in names:
            r = by_name.get(n)
            cells.append(mark[r["status"]] if r else "")
            if r and r["status"] in ("failed", "xfail", "skipped"):
                notes.setdefault((n, r["status"]), {}).setdefault(r.get("error", ""), []).append(case)
        lines.append(f"| {cell(case)} | " + " | ".join(cells) + " |")
    words = {"failed": "failed", "xfail": "failed as expected", "skipped": "skipped"}
    lines.append("")
    for (n, status), errors in notes.items():
        where = "; ".join(f"at {', '.join(cell(c) for c in cases)}: {cell(error)}" for error, cases in errors.items())
        lines.append(f"- `{n}` {words[status]} {where}")
    return "\n".join(lines)


def provenance(view: View) -> str:
    """A box naming the GPU, date, toolchain, commit and freshness of the shown results."""
    record = view.shown
    p = record["provenance"]
    parts = [p["date"][:10], f"compute capability {p['compute_capability']}", f"{p['sm_count']} SMs",
             f"driver {p['driver']}", f"CUDA {p['cuda_driver_api']} (nvcc {p['nvcc']})",
             f"PyCUDA {p['pycuda']}", f"NumPy {p['numpy']}"]
    if p.get("torch"):
        parts.append(f"PyTorch {p['torch']}")
    if p.get("git_commit"):
        parts.append(f"commit `{p['git_commit'][:10]}`")
    fresh = "stale" if view.stale else "fresh"
    parts.append(f"sources `{record['source_hash']}` ({fresh})")
    ceiling = record.get("ceiling") or {}
    if ceiling.get("gbs"):
        parts.append(f"copy ceiling {fmt.rate(ceiling['gbs'], 'GB/s')} measured in the same run")
    return (f'!!! info "Measured on {cell(view.gpu)}"\n    ' + " · ".join(parts) +
            f" · ran in {fmt.sig(record['duration_s'], 2)} s\n")


def problem_box(problem: Problem) -> str:
    kind, title = PROBLEM_BOX[problem.kind]
    return f'!!! {kind} "{title}"\n    {cell(problem)}\n'


def phase_table(view: View, case: str) -> str:
    """Every phase of a whole-program run: median, spread, share of the total."""
    rows = [r for r in view.rows("phase") if r["case"] == case]
    total = sum(metrics.median_ms(r) for r in rows)
    lines = ["| phase | median (p10–p90) | share of the whole |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {fmt.duration(metrics.median_ms(r))}<br><small>{fmt.spread(r)}</small> "
                     f"| {fmt.percent(100 * metrics.median_ms(r) / total)} |")
    lines.append(f"| **total** | **{fmt.duration(total)}** | |")
    check = "✓ output verified in every process" if all(r["status"] == "ok" for r in rows) else "✗ failed"
    nvtx = "emitted" if rows[0]["nvtx"] else "not emitted (no nvtx module)"
    return "\n".join(lines) + f"\n\n*{check}; NVTX ranges {nvtx}.*" + caption([view])


def gpu_facts(records: list[dict]) -> str:
    """The GPUs themselves, as their drivers report them at run time, beside what they measured."""
    def theoretical_gbs(p: dict) -> float:
        return 2 * p["memory_clock_khz"] * 1e3 * p["memory_bus_bits"] / 8 / 1e9  # two transfers a clock
    facts = [
        ("compute capability", lambda p, r: p["compute_capability"]),
        ("streaming multiprocessors (SMs)", lambda p, r: str(p["sm_count"])),
        ("SM clock, maximum", lambda p, r: f"{p['max_sm_clock_mhz']:,} MHz"),
        ("memory", lambda p, r: f"{p['memory_bytes'] / 2**30:.0f} GiB"),
        ("memory bus", lambda p, r: f"{p['memory_bus_bits']:,} bits"),
        ("memory clock", lambda p, r: f"{p['memory_clock_khz'] / 1e3:,.0f} MHz"),
        ("theoretical bandwidth (2 × clock × bus)", lambda p, r: fmt.rate(theoretical_gbs(p), "GB/s")),
        ("**measured** device-to-device copy", lambda p, r: f"**{fmt.rate(r['ceiling']['gbs'], 'GB/s')}**"),
        ("measured ÷ theoretical", lambda p, r: fmt.percent(100 * r["ceiling"]["gbs"] / theoretical_gbs(p))),
        ("L2 cache", lambda p, r: f"{p['l2_bytes'] / 2**20:.0f} MiB"),
        ("shared memory per SM", lambda p, r: f"{p['smem_per_sm_bytes'] // 1024} KiB"),
        ("shared memory per block (opt-in)", lambda p, r: f"{p['smem_per_block_optin_bytes'] // 1024} KiB"),
        ("registers per SM", lambda p, r: f"{p['registers_per_sm']:,} (32-bit)"),
        ("threads per SM, at most", lambda p, r: f"{p['max_threads_per_sm']:,}"),
        ("blocks per SM, at most", lambda p, r: str(p["max_blocks_per_sm"])),
        ("warp size", lambda p, r: str(p["warp_size"])),
        ("power limit", lambda p, r: f"{p['power_limit_w']:.0f} W" if p.get("power_limit_w") else "–"),
        ("driver · CUDA", lambda p, r: f"{p['driver']} · {p['cuda_driver_api']}"),
        ("read on", lambda p, r: p["date"][:10]),
    ]
    lines = ["| | " + " | ".join(cell(r["gpu"]) for r in records) + " |", "|---|" + "---|" * len(records)]
    for label, get in facts:
        lines.append(f"| {label} | " + " | ".join(get(r["provenance"], r) for r in records) + " |")
    return "\n".join(lines)
