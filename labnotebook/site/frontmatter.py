"""Pages' front matter: read it, check it, and list the entries from it. The one reader of it:
the hooks and macros use it, and ``settings.drafts`` (``--check``, without MkDocs) too, so it
imports nothing of MkDocs.

Every page needs a ``title``. An *entry* (a page under ``Entries`` in the nav) also needs
``date``, ``topic`` and ``summary``, and may say ``draft: true`` while it has no results. A
missing, mistyped or unknown key fails the build at once with one line that names the page, the
key and the fix.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import NotebookError
from .fmt import superscripts

ENTRY_KEYS = {
    "title": (str, "the page's title"),
    "date": (datetime.date, "YYYY-MM-DD, the day the entry was written"),
    "topic": (str, "the contents section it belongs to, such as 'Memory'"),
    "summary": (str, "one sentence for the contents (no figures: they belong in the page)"),
}
OPTIONAL = {"draft": (bool, "true while the entry has no results")}
# Material for MkDocs' own keys, which any page may use.
MATERIAL = {"hide", "icon", "status", "subtitle", "template", "search", "description", "render_macros"}
ENTRIES = "Entries"  # the nav section whose pages are entries


class FrontMatterError(NotebookError):
    """A page's front matter lacks a key, has one of the wrong type, or one nobody reads."""


@dataclass
class Page:
    path: str  # under docs/
    meta: dict
    entry: bool

    @property
    def title(self) -> str:
        return superscripts(self.meta["title"])

    @property
    def draft(self) -> bool:
        return bool(self.meta.get("draft"))


def read(path: Path, where: str) -> dict:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    try:
        meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    except yaml.YAMLError as e:
        raise FrontMatterError(f"{where}: front matter is not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(meta, dict):
        raise FrontMatterError(f"{where}: front matter must be `key: value` lines between the --- lines")
    return meta


def check(where: str, meta: dict, entry: bool) -> None:
    """Raise a one-line FrontMatterError for the first thing wrong with a page's front matter."""
    required = ENTRY_KEYS if entry else {"title": ENTRY_KEYS["title"]}
    allowed = {**ENTRY_KEYS, **OPTIONAL} if entry else required
    for key, (kind, hint) in required.items():
        if key not in meta:
            raise FrontMatterError(f"{where}: front matter has no '{key}'; add `{key}: <{hint}>` "
                                   "between the --- lines at the top of the page")
    for key, value in meta.items():
        if key in MATERIAL:
            continue
        if key not in allowed:
            raise FrontMatterError(f"{where}: front matter key '{key}' is not one the notebook reads "
                                   f"({', '.join(allowed)}{'' if entry else '; entries, under Entries in the nav, also have date, topic, summary, draft'}); "
                                   "check its spelling")
        kind, hint = allowed[key]
        if not isinstance(value, kind):
            raise FrontMatterError(f"{where}: front matter '{key}' must be {hint}; got {value!r}")


def nav_pages(nav, section: str | None = None) -> list[tuple[str | None, str]]:
    """``(top-level section, path)`` for every page in the nav, in order."""
    out = []
    for item in nav or []:
        title, value = next(iter(item.items())) if isinstance(item, dict) else (None, item)
        if isinstance(value, list):
            out += nav_pages(value, section or title)
        else:
            out.append((section, value))
    return out


def pages(docs: Path, nav) -> list[Page]:
    """Every Markdown page of the nav with its front matter, checked."""
    out = []
    for section, path in nav_pages(nav):
        if not path.endswith(".md"):
            continue
        where = f"docs/{path}"
        if not (docs / path).is_file():
            raise FrontMatterError(f"{where} is in mkdocs.yml's nav but does not exist")
        meta, entry = read(docs / path, where), section == ENTRIES
        check(where, meta, entry)
        out.append(Page(path, meta, entry))
    return out


def contents(entries: list[Page]) -> str:
    """The notebook's entries, one line each, by topic, oldest first, from their front matter."""
    if not entries:
        return ""
    order = sorted(entries, key=lambda p: p.meta["date"])
    latest = [p for p in order if not p.draft][-1:] or order[-1:]

    def line(p: Page) -> str:
        draft = " *(draft)*" if p.draft else ""
        return f"**{p.meta['date']}** · [{p.title}]({p.path}){draft} — {superscripts(p.meta['summary'])}"

    out = [f'!!! tip "Latest entry"\n    {line(latest[0])}\n']
    for topic in dict.fromkeys(p.meta["topic"] for p in order):
        out.append(f"### {topic}\n")
        out += [f"- {line(p)}" for p in order if p.meta["topic"] == topic]
        out.append("")
    return "\n".join(out)
