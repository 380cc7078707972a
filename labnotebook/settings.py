"""The notebook's settings, read from ``mkdocs.yml`` (``extra.notebook``) without MkDocs, so
that ``build_results.py --check`` and the site agree on them: one setting, one place.

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


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's own tags (``!ENV``, ``!!python/name``) read as nothing: only plain keys are wanted."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@dataclass(frozen=True)
class Settings:
    gpu: str  # the reference GPU
    gpus: tuple[str, ...]  # every GPU shown side by side, the reference among them


def read(root: Path) -> Settings:
    path = root / "mkdocs.yml"
    try:
        notebook = (yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {})["extra"]["notebook"]
        gpu = notebook["gpu"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise NotebookError(f"{path.name}: no extra.notebook.gpu, the reference GPU ({type(e).__name__}: {e}); "
                            "add it under `extra: notebook:`") from None
    gpus = tuple(notebook.get("gpus") or [gpu])
    return Settings(gpu, gpus if gpu in gpus else (gpu, *gpus))


def drafts(root: Path) -> set[str]:
    """The experiments whose entry page (``docs/<name>.md``) says ``draft: true``: their results
    are not yet required anywhere."""
    out = set()
    for page in (root / "docs").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        if text.startswith("---"):
            try:
                meta = yaml.safe_load(text.split("---", 2)[1]) or {}
            except yaml.YAMLError:
                continue  # the site names the page's broken front matter
            if isinstance(meta, dict) and meta.get("draft") is True:
                out.add(page.stem)
    return out
