"""``build_results.py --validate``: every committed results file passes; a file planted with one
flaw (an unverified row, a stale key, a bandwidth twice the copy ceiling, a rate past the GPU's
peak, no GPU name, thin provenance, an unknown commit, a wrong name) is refused with its reason."""

import json
import shutil
from pathlib import Path

import pytest

from labnotebook.results import keys
from labnotebook.results.validate import validate

from conftest import ROOT, run_cli_here

RESULTS = ROOT / "results"
H100 = "nvidia-h100-80gb-hbm3"


def test_every_committed_results_file_passes():
    passed, refused = validate(RESULTS, ROOT)
    assert refused == []
    assert len(passed) == len(list(RESULTS.rglob("*.json"))) >= 40


def planted(tmp_path: Path, experiment: str, change, name: str | None = None) -> Path:
    """A committed record of ``experiment`` on the H100, changed by ``change(data)``, in a results
    folder of its own (as a reader's arrives), under ``name`` where given."""
    data = json.loads((RESULTS / experiment / f"{H100}.json").read_text())
    change(data)
    path = tmp_path / "results" / experiment / (name or f"{H100}.json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    return path


def timed(data, unit: str) -> dict:
    """The fastest row of the record that counts ``unit`` ("bytes" or "flops") on the GPU."""
    rows = [r for r in data["rows"] if r.get("time") and r.get(unit) and r["kind"] in ("kernel", "baseline")
            and r.get("device", "gpu") == "gpu"]
    return max(rows, key=lambda r: r[unit] / r["time"]["median_ms"])


def unverified(data):
    row = next(r for r in data["rows"] if r["kind"] == "kernel" and r["status"] == "ok")
    row.update(status="failed", error="wrong answer: 1 of 1000 elements wrong")


def stale(data):
    """A key its sources no longer make: the declaration's hash as it was before an edit, and the
    digest rightly made from it (a record measured from other code, not one edited by hand). A
    kernel's alone would not do: where only CUDA files changed, the machine code decides."""
    data["sources"]["snippets/vec_add/experiment.py"] = "0123456789abcdef"
    data["source_hash"] = keys.digest(data["sources"], data["key_rule"])


def twice_the_ceiling(data):
    row = timed(data, "bytes")
    gbs = row["bytes"] / (row["time"]["median_ms"] * 1e6)
    row["time"]["median_ms"] *= gbs / (2 * data["ceiling"]["gbs"])


def past_the_peak(data):
    row = timed(data, "flops")
    row["time"]["median_ms"] /= 3  # 650 TFLOP/s and more, on a GPU whose tensor cores peak near 1,070


def hand_edited_key(data):
    data["source_hash"] = "fedcba9876543210"


@pytest.mark.parametrize("experiment, change, name, reason", [
    ("vec_add", unverified, None, "1_add @ 10M: failed, neither verified nor declared (wrong answer"),
    ("vec_add", stale, None, "stale: changed since they were measured: snippets/vec_add/experiment.py"),
    ("vec_add", hand_edited_key, None, "its key does not add up"),
    ("vec_add", twice_the_ceiling, None, "2.0× the run's own copy ceiling"),
    ("matmul_fp16", past_the_peak, None, "above the NVIDIA H100 80GB HBM3's dense tensor-core peak (1,071 TFLOP/s at its 1980 MHz)"),
    ("vec_add", lambda d: d.update(gpu=""), None, "names no GPU"),
    ("vec_add", lambda d: d["provenance"].update(nvcc=None, driver=None), None, "its provenance does not say driver, nvcc"),
    ("vec_add", lambda d: d["provenance"].update(git_commit="0" * 40), None, "which this repository does not have"),
    ("vec_add", lambda d: None, "nvidia-h200.json", "holds results of an NVIDIA H100 80GB HBM3, but its name says nvidia-h200"),
    ("vec_add", lambda d: d.update(format=99), None, "format"),
])
def test_a_planted_flaw_is_refused_with_its_reason(tmp_path, experiment, change, name, reason):
    path = planted(tmp_path, experiment, change, name)
    passed, refused = validate(path.parent.parent, ROOT)
    assert passed == [] and len(refused) >= 1
    assert any(reason in r.why for r in refused), [r.why for r in refused]
    assert all(r.path == path.as_posix() for r in refused)


def test_the_command_passes_the_committed_results_and_refuses_a_planted_file(tmp_path):
    good = run_cli_here("--validate", "results", "results/vec_add/nvidia-h200.json")
    assert good.returncode == 0 and "pass, 0 refused" in good.stdout, good.stdout + good.stderr
    bad = planted(tmp_path, "vec_add", twice_the_ceiling)
    shutil.copy(RESULTS / "vec_add" / "nvidia-h200.json", bad.parent)
    proc = run_cli_here("--validate", str(bad.parent.parent))
    assert proc.returncode == 1 and "1 file(s) pass, 1 refused" in proc.stdout, proc.stdout
    assert f"✗ {bad.as_posix()}: 1_add" in proc.stdout or f"✗ {bad.as_posix()}:" in proc.stdout


def test_a_failed_architecture_run_and_a_corrupt_file_are_refused(tmp_path):
    folder = tmp_path / "results" / "architectures"
    folder.mkdir(parents=True)
    data = json.loads((RESULTS / "architectures" / "sm_86.json").read_text())
    data["experiments"]["vec_add"]["kernels"]["1_add"] = {"status": "failed", "cases": 0, "why": "one: wrong answer"}
    (folder / "sm_86.json").write_text(json.dumps(data))
    (tmp_path / "results" / "vec_add").mkdir()
    (tmp_path / "results" / "vec_add" / f"{H100}.json").write_text('{"format": 12, "rows": [')
    _, refused = validate(tmp_path / "results", ROOT)
    whys = sorted(r.why for r in refused)
    assert any("a kernel failed as compute capability 8.6: vec_add: 1_add: one: wrong answer" in w for w in whys)
    assert any("is corrupt" in w for w in whys)
