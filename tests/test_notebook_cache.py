"""The analysis notebook runs again only when what it reads changed (``labnotebook/site/notebook.py``):
the notebook, the results, the engine modules it imports, each entry's headline case and the state
of each result; not for an edit elsewhere, which it would print the same output for. The copy
committed in ``_freeze/`` is the one run on the committed inputs."""

import shutil
from pathlib import Path

from labnotebook.results.freshness import CurrentKeys
from labnotebook.site import notebook

from site_support import ROOT, project

NOTEBOOK = ROOT / "docs" / "analysis.ipynb"


def test_its_key_holds_the_engine_modules_it_imports_and_no_others():
    held = {p.relative_to(ROOT).as_posix() for p in notebook.inputs(NOTEBOOK, ROOT) if p.suffix == ".py"}
    assert {"labnotebook/results/metrics.py", "labnotebook/results/freshness.py", "labnotebook/results/store.py",
            "labnotebook/declare/discover.py", "labnotebook/site/style.py", "labnotebook/results/keys.py"} <= held
    assert not {p for p in held if p.startswith(("labnotebook/build/", "labnotebook/site/macros"))}, held
    assert "%config" in NOTEBOOK.read_text() and "%config" not in notebook.code(NOTEBOOK)


def test_it_runs_again_when_what_it_reads_changes_and_not_otherwise(tmp_path):
    snippets = shutil.copytree(ROOT / "snippets", tmp_path / "snippets", ignore=shutil.ignore_patterns("__pycache__"))
    root = project(tmp_path / "p", snippets=snippets, fresh=False)
    book = root / "docs" / "analysis.ipynb"

    def key():
        return notebook.key(book, root, CurrentKeys(root))

    first = key()
    declaration = snippets / "vec_add" / "experiment.py"
    text = declaration.read_text()
    declaration.write_text(text + "\n# a comment: the same declaration, the same results, the same page\n")
    assert key() == first
    headline = next(line for line in text.splitlines() if "Headline(" in line)
    declaration.write_text(text.replace(headline, headline.replace('"2^28"', '"2^20"')))
    assert '"2^20"' in declaration.read_text() and key() != first  # another headline case
    declaration.write_text(text.replace("experiment = Experiment(", "experiment = Experiment(\n    seed=7,"))
    assert key() != first  # the same headline, but its results are stale now
    declaration.write_text(text)
    assert key() == first
    result = root / "results" / "vec_add" / "nvidia-h200.json"
    result.write_text(result.read_text().replace('"title": "', '"title": "Re', 1))
    assert key() != first


def test_the_committed_freeze_is_the_notebook_run_on_the_committed_inputs():
    frozen = ROOT / notebook.FROZEN / "analysis.ipynb"
    assert notebook.frozen_inputs(frozen) == notebook.key(NOTEBOOK, ROOT, CurrentKeys(ROOT)), (
        f"{frozen.relative_to(ROOT)} was not run on the current notebook and results: `mkdocs build` "
        "runs it; commit it with them")
