"""On a GPU: every experiment verified at awkward sizes, and faults caught by name while the other
experiments still run and earlier results stay intact. Skipped cleanly without a GPU."""

import json
import tempfile
from pathlib import Path

import numpy as np
import shutil

import pytest

from labnotebook.experiments import experiment_folders, load
from labnotebook.store import Store

from conftest import FAULTS, ROOT, copy_project, run_cli

pytestmark = pytest.mark.gpu
FOLDERS = experiment_folders(ROOT / "snippets")
# Skip the copy-ceiling measurement: these tests only verify.
NO_CEILING = {"gbs": 1.0, "median_ms": 1.0, "bytes": 1}


def run(folder, **kwargs):
    from labnotebook.run.execute import run_experiment

    return run_experiment(load(folder), folder, ROOT, NO_CEILING, log=lambda line: None, **kwargs)


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_experiment_verifies_at_small_and_awkward_sizes(name):
    exp = load(FOLDERS[name])
    rng = np.random.default_rng(0)
    sizes = [next(iter(exp.inputs(c, rng).values())).size for c in exp.edge_cases]
    assert 1 in sizes and any(s % 256 and s > 256 for s in sizes), "edge cases must include awkward sizes"
    record = run(FOLDERS[name], cases=[])
    kernels = [r for r in record["rows"] if r["kind"] == "kernel"]
    assert len(kernels) == len(exp.kernels) * len(exp.edge_cases)
    expected = {k.name for k in exp.kernels if k.expected_failure}
    for r in kernels:
        assert r["status"] in ("ok", "skipped") or (r["status"] == "xfail" and r["name"] in expected), r
    for k in exp.kernels:
        assert any(r["status"] == "ok" for r in kernels if r["name"] == k.name), f"{k.name} never verified"
    assert record["status"] == "ok"


def test_kernel_skipping_the_last_element_fails_verification():
    record = run(FAULTS / "snippets" / "wrong_answer")
    rows = {r["case"]: r for r in record["rows"]}
    assert record["status"] == "failed"
    assert rows["small"]["status"] == "failed" and "time" not in rows["small"]
    assert "1 of 1000 elements wrong; worst at index [999]: got nan" in rows["small"]["error"]
    assert "worst at index [0]" in rows["one"]["error"]


@pytest.fixture
def fault_project(tmp_path):
    """A project with one good experiment beside every broken one."""
    project = copy_project(tmp_path, sorted(p for p in (FAULTS / "snippets").iterdir() if p.is_dir()))
    good = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "good_add")
    kernel = good / "1_skips_last.cu"
    kernel.write_text(kernel.read_text().replace("i < n - 1", "i < n"))
    # Earlier, good-looking results for the wrong-answer experiment must survive its failure.
    Store(project / "results").write({"experiment": "wrong_answer", "gpu": gpu_name(), "status": "ok",
                                      "source_hash": "earlier", "rows": [],
                                      "provenance": {"date": "2026-01-01T00:00:00+00:00"}})
    return project


def gpu_name():
    from labnotebook.run.device import gpu_name_from_smi

    return gpu_name_from_smi()


def test_faults_are_named_others_still_run_and_nothing_is_lost(fault_project):
    store = Store(fault_project / "results")
    earlier = store.path("wrong_answer", gpu_name()).read_text()
    proc = run_cli(root=fault_project)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "✗ no_compile: nvcc failed" in out and "1_typo.cu(5)" in out
    assert "✗ wrong_answer: 1_skips_last @ small: wrong answer" in out
    assert "✗ hang: timed out after 20 s" in out
    assert "✗ out_of_bounds:" in out
    assert "illegal" in store.read_failure("out_of_bounds", gpu_name())["error"].lower()
    assert "✗ host_raises: host code inputs() raised ValueError: cannot make inputs" in out
    assert "✗ sneaky_read: compute-sanitizer: 1_reads_past_end: memcheck:" in out
    assert "1 ran" in out and "6 failed" in out
    good = store.read("good_add", gpu_name())
    assert good["status"] == "ok"
    assert all(entry["errors"] == 0 for entry in good["sanitizer"]["1_skips_last"].values())
    assert store.path("wrong_answer", gpu_name()).read_text() == earlier
    for name in ("no_compile", "wrong_answer", "hang", "out_of_bounds", "host_raises", "sneaky_read"):
        failure = store.read_failure(name, gpu_name())
        assert failure and failure["error"], name
        assert str(fault_project) not in json.dumps(failure), "no machine paths in results"

    again = run_cli("--only", "good_add", root=fault_project)
    assert again.returncode == 0 and "unchanged" in again.stdout


@pytest.mark.parametrize("name, kernel, case", [("vec_add", "1_add", "2^26"),
                                               ("vec_add", "2_add_float4", "2^26"),
                                               ("vec_add_3d", "2_add_3d", "512x512x512")])
def test_engine_timing_agrees_with_triton_do_bench(name, kernel, case):
    """An independent clock on the same launch: triton.testing.do_bench's median within 5%."""
    triton_testing = pytest.importorskip("triton.testing")
    from labnotebook.run.execute import Runner

    exp = load(FOLDERS[name])
    case_ = next(c for c in exp.cases if c.name == case)
    runner = Runner(exp, FOLDERS[name], ROOT, log=lambda line: None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner.compile(Path(tmp))
        inputs = exp.inputs(case_, np.random.default_rng(0))
        buffers = {k: runner.cuda.to_device(v) for k, v in inputs.items()}
        buffers["c"] = runner.cuda.mem_alloc(next(iter(inputs.values())).nbytes)
        go = runner._launcher(exp.kernel(kernel), exp.kernel(kernel).launch(case_), buffers)
        ours = runner.timer.time(go)["median_ms"]
        theirs = triton_testing.do_bench(go, warmup=25, rep=200, return_mode="median")
    finally:
        runner.close()
    assert abs(ours - theirs) / theirs < 0.05, (ours, theirs)
