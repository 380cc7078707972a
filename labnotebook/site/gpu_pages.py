"""A page per GPU with results, made by the build (``hooks.py``): ``gpus/<gpu-slug>/``, in the nav
under *GPUs*, each the ``gpu_page`` macro for its GPU. A reader's GPU gets its page from its
results files alone: nothing to write by hand, nothing typed."""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section

from ..results.freshness import CurrentKeys
from ..results.store import Store, gpu_slug

FOLDER = "gpus"
TITLE = "GPUs"


def every_gpu(root: Path, keys: CurrentKeys, configured: tuple[str, ...]) -> list[str]:
    """The GPUs the prose speaks of, then every other with results, by name."""
    store = Store(root / "results")
    found = sorted({g for name in keys.names() for g in store.gpus(name)})
    return [*configured, *(g for g in found if g not in configured)]


def source(gpu: str) -> str:
    return (f"---\ntitle: {json.dumps(gpu)}\nsummary: {json.dumps(f'Every result measured on an {gpu}.')}\n---\n\n"
            f"{{{{ gpu_page({json.dumps(gpu)}) }}}}\n")


def add(files: Files, config, gpus: list[str]) -> None:
    for gpu in gpus:
        files.append(File.generated(config, f"{FOLDER}/{gpu_slug(gpu)}.md", content=source(gpu)))


def in_nav(nav: Navigation, files: Files) -> None:
    """The GPU pages as a section of the nav, after the dashboard (or last, where it has none)."""
    pages = [f.page for f in files.documentation_pages() if f.src_uri.startswith(f"{FOLDER}/") and f.page]
    if not pages:
        return
    section = Section(TITLE, pages)
    for page in pages:
        page.parent = section
    after = next((i + 1 for i, item in enumerate(nav.items) if getattr(getattr(item, "file", None), "src_uri", "")
                  == "dashboard.md"), len(nav.items))
    nav.items.insert(after, section)
    # Previous and next follow the nav's order.
    ordered = [p for p in _pages(nav.items)]
    nav.pages[:] = ordered
    for before, page, following in zip([None, *ordered[:-1]], ordered, [*ordered[1:], None]):
        page.previous_page, page.next_page = before, following


def _pages(items):
    for item in items:
        if isinstance(item, Section):
            yield from _pages(item.children)
        elif getattr(item, "is_page", False):
            yield item
