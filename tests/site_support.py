"""Building the site in tests: copies of the project whose results are in a chosen state, built
in this process (no interpreter start per build), with every warning captured.

``project()`` makes a project folder from the real one: the real mkdocs.yml (hooks, macros,
extensions; search only where asked for), chosen docs pages, the real or fixture snippets, and the
real results with their source hashes rewritten to the current sources, so that rendering can be
tested whatever state the committed results are in. Tests then damage what they need to. The real
site is built from the committed results exactly as they are.
"""

from __future__ import annotations

import html
import logging
import dataclasses
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from labnotebook.results.freshness import CurrentKeys
from labnotebook.results.store import Store
from labnotebook.site.notebook import FROZEN

ROOT = Path(__file__).resolve().parent.parent
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def project(dst: Path, pages: list[str] | None = None, snippets: Path | None = None, results: bool = True,
            entries: list[str] | None = None, top: tuple[str, ...] = (), fresh: bool = True,
            search: bool = False) -> Path:
    """A project at ``dst``: ``pages`` of docs/ (all when None), ``snippets`` (the real ones when
    None), the real results (when ``results``; made fresh when ``fresh``), a nav of the ``top``
    pages then ``entries`` under Entries (the real nav when ``entries`` is None), and Material's
    search plugin only with ``search``."""
    (dst / "docs").mkdir(parents=True)
    for p in (ROOT / "docs").iterdir():
        if p.is_dir():
            os.symlink(p, dst / "docs" / p.name)  # assets, styles, scripts
        elif pages is None or p.name in pages:
            shutil.copyfile(p, dst / "docs" / p.name)
    os.symlink(ROOT / "labnotebook", dst / "labnotebook")  # the hooks, and labnotebook/run for snippets
    if snippets != dst / "snippets":
        os.symlink(snippets or ROOT / "snippets", dst / "snippets")
    (ROOT / ".cache").mkdir(exist_ok=True)
    os.symlink(ROOT / ".cache", dst / ".cache")  # the cubins of machine-code keys, shared between copies
    if (ROOT / FROZEN).is_dir():  # the executed notebook as committed: a copy runs it only on other inputs
        shutil.copytree(ROOT / FROZEN, dst / FROZEN)
    config = (ROOT / "mkdocs.yml").read_text()
    if not search:
        config = without_search(config)
    if entries is not None:
        config = (config.split("\nnav:")[0] + "\nnav:\n" + "".join(f"  - {p}\n" for p in top)
                  + "  - Entries:\n" + "".join(f"      - {p}\n" for p in entries))
    (dst / "mkdocs.yml").write_text(config)
    if results:
        shutil.copytree(ROOT / "results", dst / "results")
        if fresh:
            make_fresh(dst)
    return dst


def without_search(config: str) -> str:
    """mkdocs.yml without Material's search plugin: indexing every page was a quarter of each
    build, and only the real site's search is used by a test (test_browser.py)."""
    plugins = "\nplugins:\n  - search\n"
    assert plugins in config, "mkdocs.yml's plugins no longer start with search: update without_search()"
    return config.replace(plugins, "\nplugins:\n")


def make_fresh(root: Path) -> None:
    """Rewrite every stored record's key to the current sources' (no other change)."""
    store, keys = Store(root / "results"), CurrentKeys(root)
    for experiment in store.experiments():
        for record in [*store.records(experiment), *store.records(experiment, part="large")]:
            if experiment in keys:
                record.source_hash, record.sources = keys[experiment].digest, dict(keys[experiment].files)
                if record.profile:
                    record.profile = dataclasses.replace(record.profile, sources=dict(keys.profiler.files))
                store.write(record)


@dataclass
class Built:
    ok: bool  # the build finished (--strict: with no warnings)
    warnings: list[str]
    error: str | None
    site: Path
    pages: dict[str, str] = field(default_factory=dict)

    def html(self, page: str) -> str:
        """The built page's HTML (``"vec_add"`` for docs/vec_add.md)."""
        if page not in self.pages:
            path = self.site / ("index.html" if page == "index" else f"{page}/index.html")
            self.pages[page] = path.read_text(encoding="utf-8") if path.exists() else ""
        return self.pages[page]

    def text(self, page: str) -> str:
        """The page's article as text, roughly: charts, scripts and tags dropped, entities read."""
        article = re.search(r"<article.*?</article>", self.html(page), re.S)
        body = re.sub(r"<(svg|script|style)\b.*?</\1>", " ", article.group(0) if article else "", flags=re.S)
        return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))

    def warned(self, *words: str) -> list[str]:
        return [w for w in self.warnings if all(x in w for x in words)]


class _Compiled(jinja2.BytecodeCache):
    """The theme's templates compiled once per test process, not at every build (mkdocs makes a
    new Jinja environment for each): a bytecode cache in memory, each entry checked against its
    template's source by Jinja."""

    def __init__(self):
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.code:
            bucket.bytecode_from_string(self.code[bucket.key])

    def dump_bytecode(self, bucket):
        self.code[bucket.key] = bucket.bytecode_to_string()


_THEME_CODE = _Compiled()


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _with_cache(env: jinja2.Environment) -> jinja2.Environment:
    env.bytecode_cache = _THEME_CODE
    return env


def build(root: Path, strict: bool = False, site_url: str | None = None) -> Built:
    """``mkdocs build [--strict]`` of the project at ``root``, in this process (``site_url``:
    where it will be served, as NOTEBOOK_SITE_URL sets it)."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort
    from mkdocs.theme import Theme

    site = root / "site"
    capture = _Capture()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(capture)
    error, cwd, url = None, os.getcwd(), os.environ.get("NOTEBOOK_SITE_URL")
    os.chdir(root)  # mkdocs-jupyter resolves its cache folder from here
    if site_url:
        os.environ["NOTEBOOK_SITE_URL"] = site_url
    get_env = Theme.get_env
    Theme.get_env = lambda theme: _with_cache(get_env(theme))
    try:
        config = load_config(str(root / "mkdocs.yml"), site_dir=str(site), strict=strict)
        config.plugins.on_startup(command="build", dirty=False)
        try:
            mkdocs_build(config)
        finally:
            config.plugins.on_shutdown()
    except (Abort, SystemExit) as e:
        error = str(e) or "aborted"
    finally:
        Theme.get_env = get_env
        os.chdir(cwd)
        logger.removeHandler(capture)
        if site_url:
            os.environ.pop("NOTEBOOK_SITE_URL")
            if url is not None:
                os.environ["NOTEBOOK_SITE_URL"] = url
    return Built(error is None, capture.messages, error, site)


# -- fixture projects: one tiny experiment per state ----------------------------------------------

TINY = ROOT / "tests" / "site_fixtures" / "tiny"
STATES = ("fresh", "stale", "failed_headline", "failed_other", "corrupt", "missing")
PAGE = """---
title: "{name}"
date: 2026-11-2{day}
topic: Fixtures
summary: a fixture entry in the state {name}.
{draft}---

Median at the headline: {{{{ value("{name}", "1_copy", "2^20") }}}}.

The kernel is {{{{ compare("{name}", "2^20", "1_copy", "torch") }}}}.

{{{{ entry_results("{name}", baseline="torch") }}}}

On every GPU:

{{{{ gpu_table("{name}", "2^20", ["1_copy", "torch"]) }}}}
"""


def row(name: str, case: str, median: float | None = 0.01, kind: str = "kernel", status: str = "ok",
        error: str | None = None, timed: bool = True):
    from labnotebook.results.format import Check, Timing
    from labnotebook.results.rows import ROW_KINDS
    n = {"small": 1000, "2^20": 1 << 20, "one": 1}[case]
    time = (Timing(median, median * 0.9, median * 1.1, median * 0.8, median * 1.2, 100)
            if status == "ok" and timed and median else None)
    check = Check(0.0, 0.0, 0, n, 0.0, 0.0, 0.0) if status == "ok" else None
    where = {"device": "gpu"} if kind == "baseline" else {}
    return ROW_KINDS[kind](name=name, case=case, params={"n": n}, status=status, timed=timed, error=error,
                           bytes=8 * n, time=time, check=check, **where)


def rows(kernel_ms: float = 0.008, torch_ms: float = 0.010, failed: tuple[str, str] | None = None):
    """Every row of the tiny experiment: the kernel and torch at both timed cases, and the edge
    case; ``failed`` = (name, case) of one row that failed."""
    out = []
    for case in ("small", "2^20"):
        out += [row("1_copy", case, kernel_ms), row("torch", case, torch_ms, kind="baseline")]
    out += [row("1_copy", "one", timed=False), row("torch", "one", kind="baseline", timed=False)]
    if failed:
        out = [row(r.name, r.case, kind=r.kind, status="failed", timed=r.timed,
                   error="wrong answer: b: 1 of 1000 elements wrong; got nan, want <1.5>")
               if (r.name, r.case) == failed else r for r in out]
    return out


def profile_pass(kernel_dram_pct: float = 90.0, kernel_stall: str = "long_scoreboard"):
    """What ncu saw of the tiny experiment: the kernel memory-bound, torch latency-bound."""
    from labnotebook.results.format import KernelProfile, Profile, ProfilePass
    kernel = KernelProfile("copy", duration_ns=7000.0, dram_gbs=2700.0, dram_pct=kernel_dram_pct,
                           memory_pct=kernel_dram_pct, sm_pct=20.0, l1_hit_pct=0.0, l2_hit_pct=33.0,
                           achieved_occupancy_pct=80.0, theoretical_occupancy_pct=100.0, registers=16,
                           stalls={kernel_stall: 0.7, "wait": 0.3})
    torch = KernelProfile("at::native::copy_kernel<…>", duration_ns=9000.0, dram_pct=40.0, memory_pct=45.0,
                          sm_pct=30.0, stalls={"wait": 1.0})
    return ProfilePass("ok", profiles={"1_copy": Profile("2^20", [kernel]), "torch": Profile("2^20", [torch])})


def record(experiment: str, gpu: str, source_hash: str, rows_, **extra):
    from labnotebook.results.format import Ceiling, KernelInfo, Provenance, Record, Resources
    extra.setdefault("profile", profile_pass())
    provenance = Provenance(gpu=gpu, date="2026-11-21T05:00:00+00:00", compute_capability="9.0", sm_count=132,
                            max_threads_per_sm=2048, max_blocks_per_sm=32, registers_per_sm=65536,
                            smem_per_sm_bytes=233472, driver="580", cuda_driver_api="13.0", nvcc="13.0",
                            pycuda="2026.1", numpy="2.5", git_commit="0123456789abcdef")
    return Record(experiment=experiment, title="Site fixture", gpu=gpu, provenance=provenance, rows=rows_,
                  status="failed" if extra.get("error") else "ok", ceiling=Ceiling(3000.0, 0.7, 2 << 30),
                  kernels={"1_copy": KernelInfo("1_copy.cu", "copy", resources=Resources(registers=16))},
                  wall_s=1.0, phases_s={"verify": 0.5, "timing": 0.5}, source_hash=source_hash, **extra)


def fixture_project(dst: Path, states=STATES, drafts: tuple[str, ...] = (), on: str = H100) -> Path:
    """A project with one copy of the tiny experiment per state, each with a page (``drafts``
    marked ``draft: true``), the real index and dashboard, and results on both GPUs: in the
    experiment's state on the GPU ``on`` (the H100, the reference GPU, unless named), fresh on
    the other."""
    other = H200 if on == H100 else H100
    snippets = dst / "snippets"
    for name in states:
        shutil.copytree(TINY, snippets / name)
    project(dst, pages=["index.md", "dashboard.md"], snippets=snippets, results=False,
            top=("index.md", "dashboard.md"), entries=[f"{name}.md" for name in states])
    for day, name in enumerate(states):
        (dst / "docs" / f"{name}.md").write_text(PAGE.format(name=name, day=day % 10,
                                                             draft="draft: true\n" if name in drafts else ""))
    store, keys = Store(dst / "results"), CurrentKeys(dst)

    def keyed(name, gpu, rows_, fresh=True, **extra):
        """A record keyed on the current sources (or, not ``fresh``, on others), its profile too."""
        r = record(name, gpu, keys[name].digest if fresh else "0" * 16, rows_, **extra)
        r.sources = dict(keys[name].files) if fresh else {"snippets/gone.cu": "0" * 16}
        if r.profile:
            r.profile = dataclasses.replace(r.profile, sources=dict(keys.profiler.files))
        return r

    for name in states:
        store.write(keyed(name, other, rows()))
        if name == "missing":
            continue
        if name == "failed_headline" or name == "failed_other":
            failed = ("1_copy", "2^20") if name == "failed_headline" else ("torch", "small")
            store.write(keyed(name, on, rows(), fresh=False))
            store.write_failure(keyed(name, on, rows(failed=failed), error="1 row failed",
                                      failed_at="2026-11-21T06:00:00+00:00"))
        else:
            store.write(keyed(name, on, rows(), fresh=name != "stale"))
        if name == "corrupt":
            store.path(name, on).write_text('{"format": "labnotebook-results/2", "rows": [')
    for gpu in (H100, H200):  # the copy ceilings, for the GPU page's table
        store.write(keyed("ceilings", gpu, []))
    return dst


SUBPATH = "/notebook/"  # the real site is built to be served under a sub-path, as when published


def build_real_site(dst: Path) -> Built:
    """The real pages, nav, plugins and results, as committed, built with --strict for SUBPATH."""
    return build(project(dst, fresh=False, search=True), strict=True, site_url=f"http://127.0.0.1{SUBPATH}")


def collecting_context(root: Path):
    """A Context over ``root``'s results on page ``p.md``, the H100 its reference GPU, whose
    warnings and infos are collected in ``.warnings`` and ``.infos``."""
    from labnotebook.site.context import Context
    from labnotebook.site.views import Results

    warnings, infos = [], []
    c = Context(Results(root), H100, [H100, H200], warn=warnings.append, info=infos.append).at("p.md")
    c.warnings, c.infos = warnings, infos
    return c
