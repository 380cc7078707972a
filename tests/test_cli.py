"""build_results.py as a user meets it without a GPU: --list, --summary, clear errors, and a
re-run with everything up to date that needs no GPU at all. Its ``main`` runs in this process
(conftest.run_cli_here): none of these starts a build; test_results.py runs --check as CI does."""

import json

import pytest

from labnotebook.build import cli
from labnotebook.errors import NoGPUError, NotebookError
from labnotebook.results.freshness import CurrentKeys
from labnotebook.results.format import Provenance, Record, Timing
from labnotebook.results.rows import KernelRow
from labnotebook.results.store import Store

from conftest import FAULTS, copy_project, run_cli_here

H100 = "NVIDIA H100 80GB HBM3"


def fresh_record(root, name, gpu=H100):
    row = KernelRow(name="1_skips_last", case="small", params={"n": 1000}, status="ok", timed=True,
                    bytes=12_000, time=Timing(0.01, 0.009, 0.011, 0.008, 0.012, 100))
    return Record(experiment=name, title="t", gpu=gpu, provenance=Provenance(gpu=gpu, date="2026-11-21T00:00:00"),
                  rows=[row], status="ok", source_hash=CurrentKeys(root)[name].digest, sources=CurrentKeys(root)[name].files)


@pytest.fixture
def project(tmp_path):
    return copy_project(tmp_path, [FAULTS / "snippets" / "wrong_answer"])


def test_summary_lines_have_the_documented_fields(project):
    Store(project / "results").write(fresh_record(project, "wrong_answer"))
    proc = run_cli_here("--summary", root=project)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout.splitlines()[0])
    assert {"experiment", "kernel", "case", "gpu", "median_ms", "value", "unit", "verified", "stale",
            "bound_ratio"} <= set(line)
    assert line["stale"] is False and line["value"] == pytest.approx(1.2)


def test_list_works_without_a_gpu_and_says_the_state():
    proc = run_cli_here("--list")
    assert proc.returncode == 0, proc.stdout
    assert "vec_add" in proc.stdout and "vec_add_3d" in proc.stdout


def test_list_fails_on_a_broken_experiment_and_names_it(project):
    (project / "snippets" / "wrong_answer" / "experiment.py").write_text("def broken(:\n")
    proc = run_cli_here("--list", root=project)
    assert proc.returncode == 2
    assert "wrong_answer" in proc.stdout and "cannot load" in proc.stdout
    assert proc.stderr.startswith("error: snippets/wrong_answer/experiment.py: ") and "SyntaxError" in proc.stderr


def test_unknown_experiment_is_one_clear_line():
    proc = run_cli_here("--only", "no_such_thing")
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line.startswith("error: no experiment named no_such_thing; have ") and "vec_add_3d" in line


def test_everything_up_to_date_needs_no_gpu(project):
    """The README's promise: a re-run with nothing changed never touches the GPU."""
    Store(project / "results").write(fresh_record(project, "wrong_answer"))
    Store(project / "results").write(fresh_record(project, "ceilings"))
    proc = run_cli_here(root=project, env={"PATH": "/nonexistent"})  # no nvidia-smi, and no PyCUDA here
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout


def test_stale_results_without_a_gpu_are_one_clear_line(project):
    record = fresh_record(project, "wrong_answer")
    record.source_hash = "0" * 16
    Store(project / "results").write(record)
    proc = run_cli_here(root=project, env={"PATH": "/nonexistent"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and ("GPU" in lines[0] or "PyCUDA" in lines[0])


def test_kernel_and_case_filters_need_one_experiment():
    proc = run_cli_here("--kernel", "1_add")
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


CHECK_CONFIG = "extra:\n  notebook:\n    gpu: NVIDIA H100 80GB HBM3\n    gpus: [NVIDIA H100 80GB HBM3, NVIDIA H200]\n"


@pytest.fixture
def checked(project):
    """The fixture project with H100 as its reference GPU, its results fresh there and on the H200."""
    (project / "mkdocs.yml").write_text(CHECK_CONFIG)
    store = Store(project / "results")
    for name in ("wrong_answer", "ceilings"):
        for gpu in (H100, "NVIDIA H200"):
            store.write(fresh_record(project, name, gpu))
    return project


def test_check_passes_with_everything_fresh_and_needs_no_gpu(checked):
    proc = run_cli_here("--check", root=checked, env={"PATH": "/nonexistent"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 error(s)" in proc.stdout


def test_check_names_the_changed_file_and_the_command_on_the_reference_gpu(checked):
    kernel = checked / "snippets" / "wrong_answer" / "1_skips_last.cu"
    kernel.write_text(kernel.read_text() + "\n// an edit\n")
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 1
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("✗"))
    assert "wrong_answer on NVIDIA H100 80GB HBM3: stale" in line
    assert "snippets/wrong_answer/1_skips_last.cu" in line and "python build_results.py --only wrong_answer" in line
    warning = next(ln for ln in proc.stdout.splitlines() if ln.startswith("!"))
    assert "wrong_answer on NVIDIA H200: stale" in warning  # the other GPU: a warning, not an error


def test_check_only_warns_for_another_gpu_and_for_a_draft(checked):
    store = Store(checked / "results")
    store.path("wrong_answer", "NVIDIA H200").unlink()
    assert run_cli_here("--check", root=checked).returncode == 0  # missing on the H200: a warning
    store.path("wrong_answer", H100).unlink()
    assert run_cli_here("--check", root=checked).returncode == 1  # missing on the reference GPU: an error
    (checked / "docs").mkdir()
    (checked / "docs" / "wrong_answer.md").write_text("---\ntitle: W\ndraft: true\n---\n")
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 0 and "· wrong_answer on NVIDIA H100 80GB HBM3: draft, not yet run" in proc.stdout
    assert "draft result(s) not yet made" in proc.stdout and "missing" not in proc.stdout


def test_check_fails_on_a_failed_run_on_any_gpu(checked):
    record = fresh_record(checked, "wrong_answer", "NVIDIA H200")
    record.status, record.error, record.failed_at = "failed", "wrong answer: c", "2026-11-23T00:00:00+00:00"
    Store(checked / "results").write_failure(record)
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 1 and "✗ wrong_answer on NVIDIA H200: failed" in proc.stdout


def test_check_asks_for_the_large_pass_where_an_experiment_has_one(checked):
    declaration = checked / "snippets" / "wrong_answer" / "experiment.py"
    declaration.write_text(declaration.read_text().replace(
        '    edge_cases=[Case("one", n=1)],', '    edge_cases=[Case("one", n=1)],\n    large_cases=[Case("2^31", n=1 << 31)],'))
    store = Store(checked / "results")
    for gpu in (H100, "NVIDIA H200"):  # keyed on the declaration just edited
        store.write(fresh_record(checked, "wrong_answer", gpu))
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 1
    assert ("✗ wrong_answer on NVIDIA H100 80GB HBM3: large pass missing: no results on record; fix: on an "
            "NVIDIA H100 80GB HBM3: `python build_results.py --large --only wrong_answer`") in proc.stdout
    assert "! wrong_answer on NVIDIA H200: large pass missing" in proc.stdout
    for gpu in (H100, "NVIDIA H200"):
        large = fresh_record(checked, "wrong_answer", gpu)
        large.part, large.rows = "large", [KernelRow(name="1_skips_last", case="2^31",
                                                     params={"n": 1 << 31}, status="ok", timed=False)]
        store.write(large)
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 0 and "large" not in proc.stdout, proc.stdout
    # A main record made before the large pass existed, with rows at its cases, stands for it.
    store.path("wrong_answer", H100, part="large").unlink()
    main = fresh_record(checked, "wrong_answer")
    main.rows.append(large.rows[0])
    store.write(main)
    assert run_cli_here("--check", root=checked).returncode == 0


@pytest.mark.parametrize("edit, reason", [
    (('"1_skips_last.cu"', '"1_skip_last.cu"'), "kernel file 1_skip_last.cu does not exist"),
    (('"add_skip_last"', '"add_skiplast"'), "1_skips_last.cu has no __global__ function named 'add_skiplast' "
                                             "(Kernel's second argument); the file's __global__ functions: add_skip_last"),
    (("experiment = Experiment(", "experiment = Experiment(("), "experiment.py raised SyntaxError"),
])
def test_check_names_an_experiment_whose_declaration_does_not_load(checked, edit, reason):
    declaration = checked / "snippets" / "wrong_answer" / "experiment.py"
    declaration.write_text(declaration.read_text().replace(*edit))
    (checked / "docs").mkdir()
    (checked / "docs" / "wrong_answer.md").write_text("---\ntitle: W\ndraft: true\n---\n")  # a draft: still an error
    proc = run_cli_here("--check", root=checked)
    assert proc.returncode == 1
    broken = [ln for ln in proc.stdout.splitlines() if "wrong_answer" in ln]
    assert len(broken) == 1, proc.stdout  # once, not once per GPU
    assert broken[0].startswith(f"✗ wrong_answer: its declaration does not load: {reason}")
    assert "fix: edit snippets/wrong_answer/" in broken[0]


def test_a_plain_run_says_a_declaration_does_not_load_before_it_looks_for_a_gpu(checked):
    declaration = checked / "snippets" / "wrong_answer" / "experiment.py"
    declaration.write_text(declaration.read_text().replace('"1_skips_last.cu"', '"1_skip_last.cu"'))
    (checked / "docs").mkdir()
    (checked / "docs" / "wrong_answer.md").write_text("---\ntitle: W\ndraft: true\n---\n")  # left out, but named
    proc = run_cli_here(root=checked, env={"PATH": "/nonexistent"})
    assert proc.returncode == 2  # named, the others still considered, and the command fails
    assert proc.stderr.splitlines()[0] == ("error: wrong_answer: its declaration does not load: kernel file "
                                           "1_skip_last.cu does not exist; fix: edit snippets/wrong_answer/ "
                                           "(`pytest tests/test_experiments.py` checks a declaration, no GPU needed)")
