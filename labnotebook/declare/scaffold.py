"""``build_results.py new NAME``: an entry in its simplest shape, ready to edit.

It writes ``snippets/NAME/`` (one kernel and an ``experiment.py`` whose comments state the
contract), ``docs/NAME.md`` (front matter, the kernel, the numbers; a draft until it has
results) and one line in ``mkdocs.yml``'s nav. Nothing else needs touching: the dashboard and the
tests find the entry through its declaration.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

from ..errors import NotebookError
from ..results.store import ARCHITECTURES, CEILINGS

TEMPLATES = Path(__file__).parent / "templates"
NAME = re.compile(r"[a-z][a-z0-9_]*")
RESERVED = {CEILINGS, ARCHITECTURES, "index", "dashboard", "analysis", "authoring", "gpu"}  # results and pages of their own


def scaffold(root: Path, name: str, title: str | None = None) -> list[Path]:
    if not NAME.fullmatch(name) or name in RESERVED:
        raise NotebookError(f"an entry's name is lower case letters, digits and underscores, starting with a "
                            f"letter, and not one of {sorted(RESERVED)} (it names a folder, a page and a "
                            f"results folder); got {name!r}")
    folder, page, config = root / "snippets" / name, root / "docs" / f"{name}.md", root / "mkdocs.yml"
    for existing in (folder, page):
        if existing.exists():
            raise NotebookError(f"{existing.relative_to(root).as_posix()} already exists; pick another name")
    nav = add_to_nav(config.read_text(), f"{name}.md")  # before writing anything: all or nothing
    fields = {"name": name, "title": title or name.replace("_", " ").capitalize(),
              "date": datetime.date.today().isoformat()}
    folder.mkdir(parents=True)
    written = []
    for template, target in (("kernel.cu", folder / f"1_{name}.cu"), ("experiment.py", folder / "experiment.py"),
                             ("page.md", page)):
        target.write_text((TEMPLATES / template).read_text().format(**fields))
        written.append(target)
    config.write_text(nav)
    return written + [config]


def add_to_nav(text: str, page: str) -> str:
    """``text`` (mkdocs.yml) with ``page`` appended to the nav's Entries section: one line, or
    none where the section lists it already (an entry removed and made again)."""
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "- Entries:")
    except StopIteration:
        raise NotebookError("mkdocs.yml has no '- Entries:' section in its nav to add the page to") from None
    def indent_of(line: str) -> int:
        return len(line) - len(line.lstrip())
    first = lines[start + 1] if start + 1 < len(lines) else ""
    indent = indent_of(first) if first.strip().startswith("- ") else indent_of(lines[start]) + 4  # as the others are
    end = start + 1
    while end < len(lines) and lines[end].strip() and indent_of(lines[end]) >= indent:
        end += 1
    if f"- {page}" not in (ln.strip() for ln in lines[start + 1:end]):
        lines.insert(end, " " * indent + f"- {page}\n")
    return "".join(lines)
