"""The little a macro needs to know besides its arguments, and the one rule every macro follows.

A macro is a plain function ``fn(ctx, *args)`` returning Markdown. ``@macro("block")`` or
``@macro("inline")`` registers it (``MACROS``, which ``macros.define_env`` hands to mkdocs-macros)
and gives it the rule: a ``Problem`` it meets (stale, failed, missing or
unreadable results; a failed, skipped or never-timed row; a row that does not exist; a claim
the data contradicts) becomes a visible marker where the number would be, and a warning naming
the page and the macro call, so ``mkdocs build --strict`` fails while ``mkdocs serve`` still
shows the page. On a draft page, for a missing profile, and for results that are stale or
missing on a GPU other than the reference one, the same marker is shown and the problem is only
logged at INFO (``Context.lenient``).
"""

from __future__ import annotations

import functools
import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from ..results.store import CEILINGS
from . import markers
from .views import Problem, Results, View

log = logging.getLogger("mkdocs.plugins.labnotebook")

MACROS: dict[str, Callable[..., str]] = {}  # every function marked ``@macro``, by name, in the order defined


@dataclass
class Context:
    """What every macro shares: the results, the GPUs, the page being rendered, where to report."""

    results: Results
    gpu: str  # the reference GPU: pages show its results unless a macro names another
    gpus: list[str]  # the GPUs the prose speaks of (``extra.notebook.gpus``): claims are checked on each
    warn: Callable[[str], None]  # a problem on a published page: fails --strict
    info: Callable[[str], None] = lambda message: None  # the same on a draft page
    # Every GPU a side-by-side table, the dashboard and the GPU pages show: ``gpus``, then every
    # other GPU with results (a reader's, say), by name.
    shown: list[str] = field(default_factory=list)
    page: str = "?"  # the page's path under docs/
    draft: bool = False  # the page's front matter says ``draft: true``
    drafts: frozenset[str] = frozenset()  # experiments whose entry page is a draft
    _calls: list[tuple[str, list[Problem]]] = field(default_factory=list)
    _reported: set[tuple[str, str]] = field(default_factory=set)
    _boxed: set[tuple[str, str]] = field(default_factory=set)

    def at(self, page: str, draft: bool = False) -> "Context":
        """Point the context at the page about to be rendered."""
        self.page, self.draft = page, draft
        return self

    def to(self, page: str) -> str:
        """A link to ``page`` (a path under docs/) from the page being rendered."""
        return "../" * self.page.count("/") + page

    @property
    def call(self) -> str:
        return self._calls[-1][0] if self._calls else "?"

    def in_draft(self, problem: Problem) -> bool:
        """Whether a problem is on a draft page, or about a draft entry."""
        return self.draft or problem.experiment in self.drafts

    def lenient(self, problem: Problem) -> bool:
        """Whether a problem is only information (logged, marked, never failing ``--strict``): a
        profile not on record (evidence beside the numbers, not a number); results not yet run,
        or stale, in a draft (a misspelt kernel, case or experiment, a contradicted claim or a
        failed run fail a draft too); or results that are stale or missing on a GPU other than
        the reference one, ``self.gpu``."""
        if problem.kind == "unprofiled" or self.in_draft(problem) and problem.kind in ("missing", "stale"):
            return True
        if problem.gpu in (None, self.gpu) or problem.experiment is None:
            return False
        try:
            view = self.results.view(problem.experiment, problem.gpu)
        except Problem:
            return False
        stored = view.large if problem.part == "large" and view.large is not None else view.stored
        return stored.state in ("stale", "missing")

    def __post_init__(self):
        self.shown = self.shown or list(self.gpus)

    def measured(self) -> list[str]:
        """The GPUs shown whose copy ceiling and FMA rate are on record: the ones the prose speaks
        of (missing there, a marker says so) and every other that has them."""
        return [g for g in self.shown if g in self.gpus or self.view(CEILINGS, g, note=False).record is not None]

    @property
    def published(self) -> list[str]:
        """The experiments whose entries are public: every one but the drafts, which no
        dashboard, count or summary lists."""
        return [e for e in self.results.folders if e not in self.drafts]

    def report(self, problem: Problem) -> None:
        """Log a problem once per page, naming the page and the first macro call that met it."""
        key = (self.page, str(problem))
        if key not in self._reported:
            self._reported.add(key)
            (self.info if self.lenient(problem) else self.warn)(f"{self.page}: {self.call}: {problem}")

    def boxed_before(self, problem: Problem) -> bool:
        """Whether a box on this page already explains the problem (a later one can be a line)."""
        key = (self.page, str(problem))
        seen = key in self._boxed
        self._boxed.add(key)
        return seen

    def view(self, experiment: str, gpu: str | None = None, note: bool = True) -> View:
        """One experiment's results on a GPU (the page's default unless named). Their state, if
        not fresh, is noted so that the macro's output carries a marker (unless ``note`` is
        False: a macro that marks each cell itself, like the dashboard)."""
        v = self.results.view(experiment, gpu or self.gpu)
        problem = v.problem()
        if problem is not None and note:
            self.note(problem)
        return v

    def note(self, problem: Problem) -> None:
        """Mark the running macro's output with a problem it met but could show around (a
        failed row in a table, say)."""
        if self._calls:
            self._calls[-1][1].append(problem)

    @contextmanager
    def calling(self, call: str):
        noted: list[Problem] = []
        self._calls.append((call, noted))
        try:
            yield noted
        finally:
            self._calls.pop()


def describe(name: str, args: tuple, kwargs: dict) -> str:
    """A macro call as the page's source writes it: ``value("softmax", "best", "8192x8192")``."""
    def show(v):
        return json.dumps(v, ensure_ascii=False) if isinstance(v, (str, list, tuple)) else repr(v)
    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items() if k != "caller"]
    return f"{name}({', '.join(parts)})"


def macro(kind: str):
    """Mark ``fn(ctx, ...)`` as a macro, and register it: a block (tables, charts, boxes) or inline
    (a figure or phrase inside a sentence). See the module's docstring for what that promises."""
    assert kind in ("block", "inline")

    def decorate(fn):
        @functools.wraps(fn)
        def run(ctx: Context, *args, **kwargs) -> str:
            with ctx.calling(describe(fn.__name__, args, kwargs)) as noted:
                try:
                    out = fn(ctx, *args, **kwargs)
                except Problem as p:
                    return marker(ctx, p, kind)
                except Exception as e:  # a bug in a macro marks its spot instead of taking the site down
                    log.debug("macro %s raised", ctx.call, exc_info=True)
                    return marker(ctx, Problem("error", f"{type(e).__name__}: {e}"), kind)
                for p in {str(p): p for p in noted}.values():  # both sides of a comparison note the same
                    out = mark(ctx, p, out, kind)
            return out

        run.kind = kind
        MACROS[fn.__name__] = run
        return run

    return decorate


def marker(ctx: Context, problem: Problem, kind: str = "inline") -> str:
    """In place of the macro's output."""
    ctx.report(problem)
    if kind == "inline":
        return markers.inline(problem, ctx.in_draft(problem))
    return markers.box(problem, ctx.in_draft(problem), ctx.boxed_before(problem))


def mark(ctx: Context, problem: Problem, out: str, kind: str = "inline") -> str:
    """Beside output that was drawn from results that are not fresh."""
    ctx.report(problem)
    if kind == "inline":
        return out + markers.tag(problem)
    return markers.box(problem, ctx.in_draft(problem), ctx.boxed_before(problem)) + "\n" + out
