"""The analysis notebook, executed once per set of inputs and cached.

Executing it takes seconds (a kernel, matplotlib, every results file); doing so at every build
made every build slow. Its output depends only on the notebook, the results files and the code it
imports, so it runs when one of those changed and is read from ``.cache/notebooks/<hash>/`` (git
ignores ``.cache/``) otherwise. mkdocs-jupyter then renders the executed copy without running it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import NotebookError

PACKAGE = Path(__file__).resolve().parent.parent
KEEP = 4  # executed copies kept in the cache


def inputs(notebook: Path, root: Path) -> list[Path]:
    """What the notebook's output depends on: itself, the results, the declarations and the
    code that reads them."""
    return [notebook, *sorted((root / "results").rglob("*.json")),
            *sorted((root / "snippets").glob("*/experiment.py")),
            *sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)]


def key(notebook: Path, root: Path) -> str:
    h = hashlib.sha256()
    for p in inputs(notebook, root):  # named relative to their tree, so a copy of the project shares the key
        name = p.relative_to(root if p.is_relative_to(root) else PACKAGE.parent)
        h.update(name.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def executed(notebook: Path, src_uri: str, root: Path, cache: Path) -> Path:
    """The folder that holds ``notebook`` (at ``src_uri`` under it, as under docs/) executed
    against the current inputs, running it if there is none yet."""
    folder = cache / key(notebook, root)
    out = folder / src_uri
    if out.exists():
        return folder
    import nbformat
    import zmq
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor
    from traitlets.config import Config

    nb = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory(prefix="notebook-kernel-") as sockets:
        # The kernel talks over Unix sockets in a folder of our own, not TCP on localhost: no
        # other user can reach it, and ipykernel has no reason to warn, at every build, that it
        # runs "over TCP without encryption". TCP where the platform has no IPC transport.
        transport = {"transport": "ipc", "ip": str(Path(sockets) / "kernel")} if zmq.has("ipc") else {}
        try:
            NotebookClient(nb, timeout=600, kernel_name="python3", config=Config(KernelManager=transport),
                           resources={"metadata": {"path": str(notebook.parent)}}).execute()
        except CellExecutionError as e:
            raise NotebookError(f"{notebook.name}: a cell raised {e.ename}: {e.evalue}") from None
    # A cell's printing arrives in as many pieces as the kernel flushed it: one block per stream,
    # so the page is the same at every run.
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    # Keep the few latest: a checkout and the test suite's copy of it each have their own.
    for old in sorted(cache.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    return folder
