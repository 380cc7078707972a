"""build_results.py new NAME: an entry in its simplest shape, in one command, that loads and
passes the declaration checks before any GPU has run it."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from labnotebook.errors import NotebookError
from labnotebook.declare.discover import load
from labnotebook.run.protocol.verify import compare
from labnotebook.declare.scaffold import add_to_nav, scaffold

from conftest import NO_BYTECODE, ROOT, run_cli


def without_entry(config: str, page: str) -> str:
    """``config`` with no nav line for ``page``."""
    return "".join(ln for ln in config.splitlines(keepends=True) if ln.strip() != f"- {page}")


@pytest.fixture
def project(tmp_path):
    """An empty project with the real mkdocs.yml, less any nav line for ``scale``: a checkout where
    someone followed the README (``build_results.py new scale``) lists it already."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "snippets").mkdir()
    (tmp_path / "mkdocs.yml").write_text(without_entry((ROOT / "mkdocs.yml").read_text(), "scale.md"))
    return tmp_path


def test_new_scale_in_the_checkout_then_these_tests_still_pass(tmp_path):
    """The README's own example, then ``pytest``: the tests above scaffold ``scale`` too, into a
    copy of a mkdocs.yml that now lists it."""
    checkout = tmp_path / "checkout"
    (checkout / "tests").mkdir(parents=True)
    for name in ("tests/conftest.py", "tests/test_scaffold.py", "build_results.py", "mkdocs.yml", "pyproject.toml"):
        shutil.copyfile(ROOT / name, checkout / name)
    (checkout / "docs").mkdir()
    (checkout / "snippets").mkdir()
    assert run_cli("new", "scale", root=checkout).returncode == 0
    # In one process (-n 0): pyproject's -n auto would start a worker per core for a handful of
    # tests. Bytecode as the run was started with: this pytest would write its own into site-packages.
    env = {**os.environ, **({"PYTHONDONTWRITEBYTECODE": NO_BYTECODE} if NO_BYTECODE else {})}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "tests/test_scaffold.py", "-k", "not then_these_tests"],
                          cwd=checkout, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_new_writes_the_folder_the_page_and_one_nav_line(project):
    before = (project / "mkdocs.yml").read_text()
    proc = run_cli("new", "scale", root=project)
    assert proc.returncode == 0, proc.stderr
    after = (project / "mkdocs.yml").read_text()
    added = [ln for ln in after.splitlines() if ln not in before.splitlines()]
    assert added == ["      - scale.md"]
    page = (project / "docs" / "scale.md").read_text()
    assert "draft: true" in page and "topic:" in page and '--8<-- "scale/1_scale.cu:kernel"' in page
    assert '{{ entry_results("scale", baseline="torch") }}' in page


def test_the_scaffolded_experiment_loads_and_its_reference_is_what_the_kernel_computes(project):
    scaffold(project, "scale")
    exp = load(project / "snippets" / "scale")
    assert exp.headline.case in {c.name for c in exp.cases} and exp.rowwise_reference
    for case in exp.edge_cases:
        x = exp.inputs(case, np.random.default_rng(0))
        with np.errstate(over="ignore", invalid="ignore"):
            y32 = np.float32(1.5) * x["x"]  # what the kernel does, in float32
        assert compare(y32, exp.reference(**x)["y"], exp.tolerance).ok, case.name


@pytest.mark.parametrize("name, words", [("Scale", "lower case"), ("ceilings", "not one of"),
                                         ("dashboard", "not one of")])
def test_bad_names_are_refused_before_anything_is_written(project, name, words):
    with pytest.raises(NotebookError, match=words):
        scaffold(project, name)
    assert list((project / "snippets").iterdir()) == []


def test_a_config_without_entries_is_refused_and_leaves_nothing_half_made(project):
    (project / "mkdocs.yml").write_text("site_name: x\nnav:\n  - index.md\n")
    with pytest.raises(NotebookError, match="Entries"):
        scaffold(project, "scale")
    assert not (project / "snippets" / "scale").exists() and not (project / "docs" / "scale.md").exists()


def test_the_nav_line_follows_the_existing_indent():
    text = "nav:\n  - Entries:\n    - a.md\n    - b.md\nextra: {}\n"
    assert add_to_nav(text, "c.md") == "nav:\n  - Entries:\n    - a.md\n    - b.md\n    - c.md\nextra: {}\n"


def test_a_page_the_nav_lists_already_is_not_listed_twice():
    text = "nav:\n  - Entries:\n    - a.md\n    - b.md\nextra: {}\n"
    assert add_to_nav(text, "a.md") == text
