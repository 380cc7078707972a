"""The results dashboard: every kernel's headline figure on every GPU, and how each run went."""

from __future__ import annotations

from .. import metrics
from . import fmt
from .results import Problem, Results, View
from .tables import cell, label


def short(gpu: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``, for column headings."""
    return gpu.removeprefix("NVIDIA ").split()[0]


def headline_rows(results: Results, headlines: dict, gpus: list[str]) -> list[tuple[str, str, dict[str, dict]]]:
    """``(experiment, row name, {gpu: row})`` for every kernel and baseline at each headline case."""
    out = []
    for experiment, spec in headlines.items():
        views = {g: results.view(experiment, g) for g in gpus}
        names = list(dict.fromkeys(r["name"] for v in views.values() if v.shown
                                   for r in v.shown["rows"]
                                   if r["case"] == spec["case"] and "time" in r and r["kind"] != "transfer"))
        for name in names:
            out.append((experiment, name, {g: _row(v, name, spec["case"]) for g, v in views.items()}))
    return out


def _row(view: View, name: str, case: str) -> dict | None:
    try:
        return view.row(name, case)
    except Problem:
        return None


def dashboard_table(results: Results, headlines: dict, gpus: list[str]) -> str:
    head = ["entry", "", "case"]
    for g in gpus:
        head += [f"{short(g)} GB/s (% of copy)", f"{short(g)} speed-up"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for experiment, name, rows in headline_rows(results, headlines, gpus):
        spec = headlines[experiment]
        first = next(r for r in rows.values() if r)
        cells = [f"[{experiment}]({experiment}.md)", label(first), cell(spec["case"])]
        for g in gpus:
            row, view = rows[g], results.view(experiment, g)
            if row is None:
                cells += ["–", "–"]
                continue
            value, unit = metrics.throughput(row)
            pct = metrics.pct_of_ceiling(row, view.shown)
            base = _row(view, spec["baseline"], spec["case"])
            s = metrics.speedup(row, base)
            cells += [fmt.rate(value, unit) + (f" ({fmt.percent(pct)})" if pct else ""),
                      f"{fmt.times(s)} over {spec['baseline']}" if s and name != spec["baseline"] else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def execution_summary(results: Results, gpus: list[str]) -> str:
    """Like sphinx-gallery's computation times: each experiment's last run on each GPU."""
    head = ["experiment", "GPU", "date", "run time", "state", "rows", "compute-sanitizer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for experiment in results.experiments:
        for g in gpus:
            v = results.view(experiment, g)
            problems = v.problems()
            state = ", ".join(p.kind for p in problems) or "fresh"
            record = v.shown
            if record is None:
                lines.append(f"| [{experiment}]({experiment}.md) | {cell(g)} | – | – | {state} | – | – |")
                continue
            rows = record["rows"]
            count = {s: sum(r["status"] == s for r in rows) for s in ("ok", "xfail", "failed", "skipped")}
            shown = ", ".join(f"{n} {s}" for s, n in count.items() if n)
            san = record.get("sanitizer")
            san_text = ("not run" if not san else
                        "clean" if all(e["errors"] == 0 for t in san.values() for e in t.values()) else "findings")
            date = record.get("failed_at") or record["provenance"]["date"]
            lines.append(f"| [{experiment}]({experiment}.md) | {cell(g)} | {date[:16].replace('T', ' ')} UTC | "
                         f"{fmt.sig(record.get('duration_s', 0), 3)} s | {state} | {shown} | {san_text} |")
    return "\n".join(lines)
