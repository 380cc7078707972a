"""A page per GPU with results, made by the build (``hooks.py``): ``gpus/<gpu-slug>/``, in the nav
under *GPUs*, each the ``gpu_page`` macro for its GPU. A reader's GPU gets its page from its
results files alone: nothing to write by hand, nothing typed."""

from __future__ import annotations

import json
from pathlib import Path

from ..results.freshness import CurrentKeys
from ..results.store import CEILINGS, Store, gpu_slug
from . import dashboard as board, fmt, tables
from .context import macro

FOLDER = "gpus"
TITLE = "GPUs"


def every_gpu(root: Path, keys: CurrentKeys, configured: tuple[str, ...]) -> list[str]:
    """The GPUs the prose speaks of, then every other with results, by name; one a page, so not
    the slug a file that cannot be read is listed by where its GPU's name is known."""
    store = Store(root / "results")
    found = sorted({g for name in keys.names() for g in store.gpus(name)})
    out = list(configured)
    for g in found:
        if gpu_slug(g) not in {gpu_slug(o) for o in out}:
            out.append(g)
    return out


def source(gpu: str) -> str:
    return (f"---\ntitle: {json.dumps(gpu)}\nsummary: {json.dumps(f'Every result measured on an {gpu}.')}\n---\n\n"
            f"{{{{ gpu_page({json.dumps(gpu)}) }}}}\n")


# MkDocs is imported where a build calls in (hooks.py): the macros, which import this module
# for theirs, are read without it too (the GPU tests' machines have none).

def add(files, config, gpus: list[str]) -> None:
    """A generated page of ``files`` for each of ``gpus``."""
    from mkdocs.structure.files import File

    for gpu in gpus:
        files.append(File.generated(config, f"{FOLDER}/{gpu_slug(gpu)}.md", content=source(gpu)))


def in_nav(nav, files) -> None:
    """The GPU pages as a section of the nav, after the dashboard (or last, where it has none)."""
    from mkdocs.structure.nav import Section

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
        if getattr(item, "is_section", False):
            yield from _pages(item.children)
        elif getattr(item, "is_page", False):
            yield item


@macro("block")
def gpu_page(ctx, gpu):
    """A GPU's own page: what it is, every entry at its headline case on it, and its runs, all
    from its results files."""
    if gpu == ctx.gpu:
        said = ("It is the notebook's reference GPU: the entries' pages show its results, and the build fails "
                "where they are not fresh.")
    elif gpu in ctx.gpus:
        said = "The entries show it beside the reference GPU, and check their claims on it."
    else:
        spoken = " and the ".join(tables.short(g) for g in ctx.gpus)
        said = (f"The entries show it beside the others. Their prose speaks of the {spoken}, and their claims "
                "are checked on those alone; this page and the tables beside them are this GPU's own figures.")
    ceilings = ctx.view(CEILINGS, gpu, note=False).record
    facts = tables.gpu_facts([ceilings]) if ceilings is not None else (
        f"No copy ceiling on record: its results came without `results/ceilings/{gpu_slug(gpu)}.json`, "
        "so no figure here is given as a share of it.")
    headline = board.dashboard_table(ctx, board.lines(ctx, [gpu]), [gpu])
    return (f"Every figure on this page was measured on an {fmt.cell(gpu)} by `build_results.py`. {said}\n\n"
            f"## What it is\n\n{facts}\n\n## Every entry at its headline case\n\n"
            f'<div class="nb-dashboard" markdown>\n\n{headline}\n\n</div>\n\n'
            f"## Its runs\n\n{board.execution_summary(ctx, [gpu])}\n")
