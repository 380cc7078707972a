"""The macros a page uses to show results (mkdocs-macros loads this module by name).

Every number on a page comes through one of these, from the committed results. When a result is
missing, failed or stale the macro shows that on the page instead of (or beside) the number and
logs a warning, so ``mkdocs build --strict`` fails while ``mkdocs serve`` still shows the page.
"""

from __future__ import annotations

import functools
import logging
import shutil
from pathlib import Path

import yaml

from .. import metrics
from ..errors import NotebookError
from . import dashboard as board
from . import fmt, plots, tables
from ..store import CEILINGS
from .results import Problem, Results, View

log = logging.getLogger("mkdocs.plugins.labnotebook")
SOURCE_SUFFIXES = {".cu", ".cuh", ".py"}


def define_env(env) -> None:
    root = Path(env.conf["config_file_path"]).parent
    results = Results(root)
    notebook = env.conf["extra"]["notebook"]
    default_gpu = notebook["gpu"]
    reported: set[tuple[str, str]] = set()

    def page() -> str:
        return env.page.file.src_uri if env.page else "?"

    def warn(message: str) -> None:
        key = (page(), message)
        if key not in reported:
            reported.add(key)
            log.warning(f"{page()}: {message}")

    def view(experiment: str, gpu: str | None) -> View:
        v = results.view(experiment, gpu or default_gpu)
        for problem in v.problems():
            warn(str(problem))
        return v

    def guarded(show_problem):
        """Register a macro that, on a problem, warns (failing --strict) and shows ``show_problem``."""
        def register(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                try:
                    return fn(*args, **kwargs)
                except (Problem, NotebookError) as e:
                    warn(str(e))
                    return show_problem(e if isinstance(e, Problem) else Problem("missing", str(e)))
            return env.macro(wrapper)
        return register

    # A block macro's problem is a box in its place; an inline value's, a marked placeholder.
    block = guarded(tables.problem_box)
    inline = guarded(lambda p: f'<span class="nb-problem" title="{tables.cell(p)}">⚠ {p.kind} result</span>')

    def boxes(v: View) -> str:
        return "".join(tables.problem_box(p) + "\n" for p in v.problems())

    @block
    def results_table(experiment, cases=None, kernels=None, baseline=None, percent=False, gpu=None):
        """A table of rows, with any problem boxes above it and the provenance below."""
        v = view(experiment, gpu)
        return (boxes(v) + tables.results_table(v, cases, kernels, baseline, percent) + "\n\n"
                + tables.provenance(v))

    @block
    def rung_bars(experiment, case, kernels, reference, gpu=None):
        v = view(experiment, gpu)
        return f'<figure class="nb-plot">\n{plots.rung_bars(v, case, kernels, reference)}\n</figure>'

    @block
    def phase_chart(experiment, case, gpu=None):
        v = view(experiment, gpu)
        return f'<figure class="nb-plot">\n{plots.phase_chart(v, case)}\n</figure>'

    @block
    def phase_table(experiment, case, gpu=None):
        v = view(experiment, gpu)
        return boxes(v) + tables.phase_table(v, case)

    @block
    def gpu_facts():
        """Each GPU's properties as read at run time (the ceiling runs' provenance)."""
        records = [results.view(CEILINGS, g).shown for g in notebook["gpus"]]
        if not all(records):
            raise Problem("missing", f"no ceiling results for every GPU in {notebook['gpus']}")
        return tables.gpu_facts(records) + "\n"

    @block
    def compare(experiment, kernels, cases, gpu=None):
        """A compact table of a few rows, speed-ups over the first: a rung beside the one before."""
        v = view(experiment, gpu)
        return (boxes(v) + tables.results_table(v, cases, kernels, kernels[0]) + tables.caption([v]))

    @block
    def end_to_end(experiment, kernel, cpu, cases, gpu=None):
        v = view(experiment, gpu)
        return boxes(v) + tables.end_to_end_table(v, kernel, cpu, cases) + "\n"

    @block
    def sweep_plot(experiment, names, size_param="n", title="Bandwidth against size", cases=None, gpu=None):
        v = view(experiment, gpu)
        if v.shown is None:
            raise v.problems()[0]
        svg = plots.bandwidth_sweep(v, names, size_param, title, cases)
        return f'<figure class="nb-plot">\n{svg}\n</figure>'

    @block
    def gpu_table(experiment, case, kernels, gpus=None):
        """One case on every GPU that has results (or those named), side by side."""
        names = gpus or notebook["gpus"]
        views = [view(experiment, g) for g in names]
        return tables.gpu_table(views, case, kernels) + "\n"

    @block
    def dashboard():
        """Every kernel's headline figure on every GPU, linked to its entry."""
        return board.dashboard_table(results, notebook["headlines"], notebook["gpus"]) + "\n"

    @block
    def execution_summary():
        return board.execution_summary(results, notebook["gpus"]) + "\n"

    @block
    def ceiling_chart():
        """Each kernel's bandwidth at its headline case as a share of the copy ceiling, per GPU."""
        entries = []
        for experiment, name, rows in board.headline_rows(results, notebook["headlines"], notebook["gpus"]):
            pcts = {g: metrics.pct_of_ceiling(r, results.view(experiment, g).shown) if r else None
                    for g, r in rows.items()}
            if any(pcts.values()):
                entries.append((f"{experiment} · {name}", pcts))
        return f'<figure class="nb-plot">\n{plots.ceiling_chart(entries, notebook["gpus"])}\n</figure>'

    @block
    def kernel_report(experiment, gpu=None):
        return tables.kernel_report(view(experiment, gpu))

    @block
    def case_bars(experiment, kernel, cases, title, gpu=None):
        v = view(experiment, gpu)
        return f'<figure class="nb-plot">\n{plots.case_bars(v, kernel, cases, title)}\n</figure>'

    @block
    def checks(experiment, gpu=None):
        return tables.checks_table(view(experiment, gpu))

    @inline
    def value(experiment, kernel, case, what="median", gpu=None):
        """One figure of one row: median, throughput or pct_ceiling."""
        v = view(experiment, gpu)
        row = v.row(kernel, case)
        if what == "median":
            text = fmt.duration(metrics.median_ms(row))
        elif what == "throughput":
            text = fmt.rate(*metrics.throughput(row))
        elif what == "pct_ceiling":
            text = fmt.percent(metrics.pct_of_ceiling(row, v.shown))
        elif what == "max_error":
            text = f"{fmt.sig(row['check']['max_abs_err'], 2)}"
        else:
            raise NotebookError(f"value(): unknown figure {what!r}")
        return text + (' <span class="nb-stale">(stale)</span>' if v.stale else "")

    @inline
    def ceiling(experiment, gpu=None):
        """The copy bandwidth measured in the same run as the experiment's results."""
        v = view(experiment, gpu)
        return fmt.rate(v.shown["ceiling"]["gbs"], "GB/s")

    @inline
    def speedup(experiment, case, fast, slow, with_copies=False, words=False, gpu=None):
        """How many times faster ``fast`` is than ``slow``; with_copies adds fast's transfers.
        With ``words``, the sentence's verb comes from the data: '3.1× faster' or '1.3× slower'."""
        v = view(experiment, gpu)
        fast_ms = metrics.median_ms(v.row(fast, case))
        if with_copies:
            fast_ms += sum(metrics.median_ms(v.row(t, case)) for t in ("h2d", "d2h"))
        ratio = metrics.median_ms(v.row(slow, case)) / fast_ms
        if not words:
            return fmt.times(ratio)
        return f"{fmt.times(ratio)} faster" if ratio >= 1 else f"{fmt.times(1 / ratio)} slower"

    @inline
    def ratio(experiment, kernel, fast_case, slow_case, gpu=None):
        """How many times longer ``kernel`` takes at ``slow_case`` than at ``fast_case``."""
        v = view(experiment, gpu)
        return fmt.times(metrics.median_ms(v.row(kernel, slow_case)) / metrics.median_ms(v.row(kernel, fast_case)))

    @inline
    def best(experiment, case, gpu=None):
        """The name of the fastest verified kernel at ``case``."""
        return f"`{view(experiment, gpu).best(case)}`"

    @inline
    def gpu_name(experiment, gpu=None):
        return tables.cell(view(experiment, gpu).gpu)

    @inline
    def same_output(experiment, kernels, gpu=None):
        """Whether the kernels wrote bit-identical outputs in every case, checked by digest."""
        v = view(experiment, gpu)
        by_case: dict[str, dict[str, str]] = {}
        for r in v.shown["rows"]:
            if r["kind"] == "kernel" and r["name"] in kernels and r["status"] == "ok":
                by_case.setdefault(r["case"], {})[r["name"]] = r["digest"]
        both = {c: set(d.values()) for c, d in by_case.items() if len(d) == len(kernels)}
        differ = [c for c, digests in both.items() if len(digests) != 1]
        if differ or not both:
            raise Problem("failed", f"{experiment}: {kernels} differ at {differ or 'every case'}")
        return f"bit-identical in all {len(both)} cases where both ran"

    @block
    def sources(experiment):
        """Links to the exact files that ran (copied into the site by on_post_build)."""
        folder = results.experiments[experiment]
        files = sorted(p.name for p in folder.iterdir() if p.suffix in SOURCE_SUFFIXES)
        links = " · ".join(f'<a href="../snippets/{experiment}/{name}" download><code>{name}</code></a>'
                           for name in files)
        return (f'!!! abstract "Source files"\n    {links} — source hash '
                f'`{results.hashes[experiment]}`, as recorded with the results.\n')

    @block
    def run_output(experiment, gpu=None):
        """What the run reported, row by row, as the build prints it."""
        v = view(experiment, gpu)
        if v.shown is None:
            raise v.problems()[0]
        lines = []
        for r in v.shown["rows"]:
            t = f"{r['time']['median_ms']:.4f} ms" if "time" in r else ""
            lines.append(f"{r['case']:>20}  {r['name']:<24} {r['status']:<8} {t}  {r.get('error', '')}".rstrip())
        return "```text\n" + "\n".join(lines) + "\n```\n"

    @env.macro
    def contents():
        """The notebook's entries, one line each, oldest first, from each page's front matter."""
        docs = Path(env.conf["docs_dir"])
        entries = []
        for position, path in enumerate(_nav_files(env.conf["nav"])):
            meta = _front_matter(docs / path)
            if "date" in meta:
                entries.append((str(meta["date"]), position, path, meta))
        entries.sort()
        if not entries:
            return ""
        date, _, path, meta = entries[-1]
        out = [f'!!! tip "Latest entry, {date}"\n    [{meta["title"]}]({path}) — {meta.get("summary", "")}\n']
        for topic in dict.fromkeys(m.get("topic", "Other") for *_, m in entries):
            out.append(f"### {topic}\n")
            out += [f"- **{d}** · [{m['title']}]({p}) — {m.get('summary', '')}"
                    for d, _, p, m in entries if m.get("topic", "Other") == topic]
            out.append("")
        return "\n".join(out)


def _nav_files(nav) -> list[str]:
    out = []
    for item in nav or []:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_files(value) if isinstance(value, list) else [value]
    return out


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    return yaml.safe_load(text.split("---", 2)[1]) or {}


def on_post_build(env) -> None:
    """Put the experiments' source files into the site, so pages can link the very files that ran."""
    root = Path(env.conf["config_file_path"]).parent
    site = Path(env.conf["site_dir"])
    for folder in (root / "snippets").iterdir():
        if folder.is_dir():
            for f in folder.iterdir():
                if f.suffix in SOURCE_SUFFIXES:
                    (site / "snippets" / folder.name).mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, site / "snippets" / folder.name / f.name)
