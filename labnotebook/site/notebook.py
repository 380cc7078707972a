"""The analysis notebook, executed once per set of inputs and frozen, as Quarto's ``_freeze/``.

Executing it takes seconds (a Jupyter kernel, matplotlib, every results file); doing so at every
build made every build slow. Its output depends only on the notebook, the results files, the engine
modules it imports and what it reads of the declarations and sources through them (each
entry's headline case, each result's state), so it runs when one of those changed and is read
from ``_freeze/<its path under docs/>`` otherwise: an edit to a kernel or a declaration that
leaves those as they were, or to an engine module it does not import, runs nothing. The executed
copy names the inputs it was run on (``metadata.labnotebook.inputs``, their hash) and is
committed with the results it was run on, so a fresh clone builds and serves the site without
running it (tests/test_notebook_cache.py fails where the committed copy is not the current
one). mkdocs-jupyter then renders the executed copy without running it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ..declare.discover import load
from ..errors import NotebookError
from ..results.freshness import CurrentKeys, Stored
from ..results.keys import Sources
from ..results.store import Store

PACKAGE = Path(__file__).resolve().parent.parent
FROZEN = "_freeze"  # under the project's root: each notebook executed, at its path under docs/


def inputs(notebook: Path, root: Path) -> list[Path]:
    """The files the notebook's output depends on: itself, the results and the engine modules it
    imports, transitively."""
    imported = Sources(root).engine_closure(code(notebook).encode())
    return [notebook, *sorted((root / "results").rglob("*.json")), *sorted(imported)]


def code(notebook: Path) -> str:
    """The notebook's code cells as one Python source, its IPython magics left out."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    lines = [ln for c in cells if c["cell_type"] == "code" for ln in "".join(c["source"]).splitlines()]
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))


def read(root: Path, current: CurrentKeys) -> bytes:
    """What the notebook reads of the declarations and sources: each entry's headline case, and
    the state of each of its results (stale where an edit changed what it measured)."""
    store = Store(root / "results")
    facts = {}
    for name, folder in current.folders.items():
        headline = load(folder).headline
        facts[name] = {"headline": headline.case if headline else None,
                       "states": {gpu: Stored.read(store, name, gpu, current).state for gpu in store.gpus(name)}}
    return json.dumps(facts, sort_keys=True).encode()


def key(notebook: Path, root: Path, current: CurrentKeys) -> str:
    h = hashlib.sha256()
    for p in inputs(notebook, root):  # named relative to their tree, so a copy of the project shares the key
        name = p.relative_to(root if p.is_relative_to(root) else PACKAGE.parent)
        h.update(name.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(read(root, current))
    return h.hexdigest()[:16]


def frozen_inputs(frozen: Path) -> str | None:
    """The hash of the inputs a frozen notebook was executed on; None where there is none."""
    try:
        return json.loads(frozen.read_text(encoding="utf-8"))["metadata"]["labnotebook"]["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def executed(notebook: Path, src_uri: str, root: Path, current: CurrentKeys) -> Path:
    """The folder (``root/_freeze``) that holds ``notebook`` (at ``src_uri`` under it, as under
    docs/) executed against the current inputs, running it first where the frozen copy was run
    on others, or there is none."""
    inputs_now = key(notebook, root, current)
    folder = root / FROZEN
    out = folder / src_uri
    if frozen_inputs(out) == inputs_now:
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
            # No timestamps in the cells' metadata: the frozen copy changes only with its output.
            NotebookClient(nb, timeout=600, kernel_name="python3", config=Config(KernelManager=transport),
                           record_timing=False, resources={"metadata": {"path": str(notebook.parent)}}).execute()
        except CellExecutionError as e:
            raise NotebookError(f"{notebook.name}: a cell raised {e.ename}: {e.evalue}") from None
    # A cell's printing arrives in as many pieces as the kernel flushed it: one block per stream,
    # so the page is the same at every run.
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    nb.metadata["labnotebook"] = {"inputs": inputs_now}
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return folder
