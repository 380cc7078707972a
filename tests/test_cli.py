"""build_results.py as a user meets it without a GPU: --list, --summary, clear errors, and a
re-run with everything up to date that needs no GPU at all."""

import json

import pytest

from labnotebook import cli
from labnotebook.errors import NoGPUError, NotebookError
from labnotebook.freshness import current_hashes
from labnotebook.records import Provenance, Record, Row, Timing
from labnotebook.store import Store

from conftest import FAULTS, copy_project, run_cli

H100 = "NVIDIA H100 80GB HBM3"


def fresh_record(root, name):
    row = Row(kind="kernel", name="1_skips_last", case="small", params={"n": 1000}, status="ok", timed=True,
              bytes=12_000, time=Timing(0.01, 0.009, 0.011, 0.008, 0.012, 100))
    return Record(experiment=name, title="t", gpu=H100, provenance=Provenance(gpu=H100, date="2026-11-21T00:00:00"),
                  rows=[row], status="ok", source_hash=current_hashes(root)[name])


@pytest.fixture
def project(tmp_path):
    return copy_project(tmp_path, [FAULTS / "snippets" / "wrong_answer"])


def test_summary_lines_have_the_documented_fields(project):
    Store(project / "results").write(fresh_record(project, "wrong_answer"))
    proc = run_cli("--summary", root=project)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout.splitlines()[0])
    assert {"experiment", "kernel", "case", "gpu", "median_ms", "value", "unit", "verified", "stale",
            "bound_ratio"} <= set(line)
    assert line["stale"] is False and line["value"] == pytest.approx(1.2)


def test_list_works_without_a_gpu_and_says_the_state():
    proc = run_cli("--list")
    assert proc.returncode == 0, proc.stdout
    assert "vec_add" in proc.stdout and "vec_add_3d" in proc.stdout


def test_list_fails_on_a_broken_experiment_and_names_it(project):
    (project / "snippets" / "wrong_answer" / "experiment.py").write_text("def broken(:\n")
    proc = run_cli("--list", root=project)
    assert proc.returncode == 2
    assert "wrong_answer" in proc.stdout and "cannot load" in proc.stdout
    assert proc.stderr.startswith("error: snippets/wrong_answer/experiment.py: ") and "SyntaxError" in proc.stderr


def test_unknown_experiment_is_one_clear_line():
    proc = run_cli("--only", "no_such_thing")
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line.startswith("error: no experiment named no_such_thing; have ") and "vec_add_3d" in line


def test_everything_up_to_date_needs_no_gpu(project):
    """The README's promise: a re-run with nothing changed never touches the GPU."""
    Store(project / "results").write(fresh_record(project, "wrong_answer"))
    proc = run_cli(root=project, env={"PATH": "/nonexistent"})  # no nvidia-smi, and no PyCUDA here
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout


def test_stale_results_without_a_gpu_are_one_clear_line(project):
    record = fresh_record(project, "wrong_answer")
    record.source_hash = "0" * 16
    Store(project / "results").write(record)
    proc = run_cli(root=project, env={"PATH": "/nonexistent"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and ("GPU" in lines[0] or "PyCUDA" in lines[0])


def test_kernel_and_case_filters_need_one_experiment():
    proc = run_cli("--kernel", "1_add")
    assert proc.returncode == 2 and "--only NAME" in proc.stderr


@pytest.fixture
def machine(monkeypatch):
    """A pretend machine: PyCUDA importable, nvidia-smi listing the given GPUs."""
    def set_gpus(*names):
        monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: object())
        monkeypatch.setattr(cli, "gpus_from_smi", lambda: list(enumerate(names)))
    return set_gpus


def test_gpus_all_takes_every_gpu_of_one_model(machine):
    machine(H100, H100, H100, H100)
    assert cli.require_gpus("all") == (H100, [0, 1, 2, 3])
    assert cli.require_gpus("2,0") == (H100, [0, 2])
    assert cli.require_gpus("0") == (H100, [0])


def test_gpus_of_different_models_are_refused(machine):
    machine(H100, "NVIDIA H200")
    with pytest.raises(NotebookError, match="different models"):
        cli.require_gpus("all")
    with pytest.raises(NotebookError, match="no GPU 5"):
        cli.require_gpus("5")
    with pytest.raises(NotebookError, match="indices such as"):
        cli.require_gpus("first")


def test_no_pycuda_and_no_gpu_are_one_clear_line(monkeypatch, machine):
    machine()
    with pytest.raises(NoGPUError, match="no NVIDIA GPU found"):
        cli.require_gpus("0")
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(NoGPUError, match="PyCUDA is not installed.*mkdocs serve"):
        cli.require_gpus("0")
