"""The notebook's settings, read from ``mkdocs.yml`` (``extra.notebook``) by one function, ``of``,
whether from the file without MkDocs (``build_results.py --check``) or from MkDocs' config (the
site's macros), so that the two agree on them: one setting, one place. Which entries are drafts
comes from their pages' front matter, read by the site's one reader (``site/frontmatter.py``).

- ``gpu``: the reference GPU. The pages show its results, and its results must be fresh:
  ``--check`` and ``mkdocs build --strict`` fail on any that is stale, failed or missing.
- ``gpus``: every GPU a side-by-side table shows. A stale or missing result on one of the others
  is shown as such wherever it appears, and is a warning, never a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import NotebookError
from .site import frontmatter


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's own tags (``!ENV``, ``!!python/name``) read as nothing: only plain keys are wanted."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@dataclass(frozen=True)
class Settings:
    gpu: str  # the reference GPU
    gpus: tuple[str, ...]  # every GPU shown side by side, the reference among them


def read(root: Path) -> Settings:
    """The settings in ``root/mkdocs.yml``, read without MkDocs."""
    path = root / "mkdocs.yml"
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    except (OSError, yaml.YAMLError) as e:
        raise _unset(path.name, e) from None
    return of(config, path.name)


def of(config, where: str = "mkdocs.yml") -> Settings:
    """The settings in a read config: mkdocs.yml's keys as a dict, or MkDocs' own config (the
    site's macros); ``where`` names the file in an error."""
    try:
        notebook = config["extra"]["notebook"]
        gpu = notebook["gpu"]
    except (KeyError, TypeError) as e:
        raise _unset(where, e) from None
    gpus = tuple(notebook.get("gpus") or [gpu])
    return Settings(gpu, gpus if gpu in gpus else (gpu, *gpus))


def _unset(where: str, e: Exception) -> NotebookError:
    return NotebookError(f"{where}: no extra.notebook.gpu, the reference GPU ({type(e).__name__}: {e}); "
                         "add it under `extra: notebook:`")


def drafts(root: Path) -> set[str]:
    """The experiments whose entry page (``docs/<name>.md``) says ``draft: true``: their results
    are not yet required anywhere."""
    out = set()
    for page in (root / "docs").glob("*.md"):
        try:
            meta = frontmatter.read(page, f"docs/{page.name}")
        except frontmatter.FrontMatterError:
            continue  # the site names the page's broken front matter
        if meta.get("draft") is True:
            out.add(page.stem)
    return out
