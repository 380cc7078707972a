"""What a page shows where a number cannot be trusted: a box in place of a block (a table, a
chart), a marked word in place of an inline figure, a tag beside a figure that is shown but
stale. Each carries the whole message on hover; the build log carries it too."""

from __future__ import annotations

import html

from .fmt import cell
from .views import Problem, run_command

# kind -> (admonition type, box title, the word an inline marker shows)
LOOKS = {
    "stale": ("warning", "Stale results", "stale"),
    "failed": ("failure", "Last run failed", "run failed"),
    "missing": ("danger", "No results", "no results"),
    "corrupt": ("danger", "Unreadable results", "unreadable results"),
    "row failed": ("failure", "Failed", "failed"),
    "skipped": ("warning", "Skipped", "skipped"),
    "untimed": ("warning", "Not timed", "not timed"),
    "unprofiled": ("warning", "No profile", "no profile"),
    "absent": ("danger", "No such result", "no such result"),
    "contradicted": ("failure", "Contradicted by the results", "contradicted by the results"),
    "error": ("bug", "Macro error", "macro error"),
}
DRAFT = ("note", "No results yet", "no results yet")


def _look(problem: Problem, draft: bool) -> tuple[str, str, str]:
    return DRAFT if draft and problem.kind == "missing" else LOOKS[problem.kind]


def box(problem: Problem, draft: bool = False, repeat: bool = False) -> str:
    """An admonition in place of a block. A problem already boxed higher up the page is
    repeated as one marked line, so a page of stale tables is not a page of boxes."""
    kind, title, word = _look(problem, draft)
    if repeat:
        return f'<p class="nb-problem" title="{cell(problem)}">⚠ {word}: {cell(problem.experiment or "")}</p>\n'
    text = html.escape(str(problem))  # Markdown stays live here: the command in backticks is set as code
    if draft and problem.kind == "missing":
        text = (f"This entry is a draft: {text}. It builds without results until its "
                f"`draft: true` line is removed from the front matter.")
    if problem.kind == "missing" and problem.experiment:
        text += f"\n\n    ```bash\n    {run_command(problem.experiment, problem.part)}\n    ```"
    return f'!!! {kind} "{title}"\n    {text}\n'


def inline(problem: Problem, draft: bool = False) -> str:
    """A marked word in place of an inline figure."""
    word = _look(problem, draft)[2]
    return f'<span class="nb-problem" title="{cell(problem)}">⚠ {word}</span>'


def tag(problem: Problem) -> str:
    """Beside a figure that is shown but not to be trusted (stale, or from an older run than a
    failed one)."""
    return f' <span class="nb-stale" title="{cell(problem)}">⚠ {LOOKS[problem.kind][2]}</span>'
