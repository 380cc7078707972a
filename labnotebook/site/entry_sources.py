"""Where an entry's numbers come from: the files that ran and the hash that keys its results on
them, and the commands that make them again on a GPU."""

from __future__ import annotations

from . import fmt
from .views import Problem, run_command


def files(ctx, experiment) -> str:
    """The box that links the files that ran, names the engine files the key also covers, and
    gives the key's hash (the ``sources`` macro)."""
    ctx.results.folder(experiment)
    key = ctx.results.keys[experiment]
    if key.error:
        raise Problem("error", f"{experiment}: {key.error}", experiment)
    here = f"snippets/{experiment}/"
    ours = sorted((path.removeprefix(here) for path in key.files if path.startswith(here)), key=fmt.rung_order)
    links = " · ".join(f'<a href="../{here}{name}" download><code>{name}</code></a>' for name in ours)
    engine = ", ".join(f"`{path.removeprefix('labnotebook/')}`" for path in sorted(key.files)
                       if not path.startswith(here) and "/protocol/" not in path)
    return (f'!!! abstract "Source files"\n    {links}. Its results are keyed on these, on {engine} and on the '
            f"measurement protocol (`run/protocol/`): together they hash to `{key.digest}`, and results measured "
            "from exactly these files record the same hash. An edit anywhere else stales nothing.\n")


def commands(ctx, experiment) -> str:
    """The commands that re-make the entry's results, annotated (the ``reproduce`` macro)."""
    ctx.results.folder(experiment)
    return f"""```bash
pip install -e '.[gpu]'  # (1)!
{run_command(experiment)} --force  # (2)!
python build_results.py --summary | grep '"{experiment}"'  # (3)!
mkdocs serve  # (4)!
```

1.  On a machine with an NVIDIA GPU and the CUDA toolkit: PyCUDA builds against `nvcc`.
2.  Compiles, verifies and times every kernel of this entry, runs compute-sanitizer over the
    CUDA C++ ones (no sanitizer frame could name a Python-DSL kernel), and writes
    `results/{experiment}/<gpu>.json` — only if every check passed.
3.  Every result of this entry on every GPU, one JSON object per line: what this page is drawn from.
4.  The page again, now from your GPU's results if you point `extra.notebook.gpu` in `mkdocs.yml` at it.
"""
