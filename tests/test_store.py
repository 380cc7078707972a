"""The results store: round trips, atomic writes, refusal of foreign files, failure records."""

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from labnotebook.errors import ResultsError
from labnotebook.results.format import FORMAT, Check, Provenance, Record
from labnotebook.results.rows import KernelRow
from labnotebook.results.store import Store, gpu_slug, read_json, read_record, write_json

GPU = "NVIDIA H100 80GB HBM3"


def record(**extra):
    check = Check(max_abs_err=math.inf, max_rel_err=math.inf, mismatches=1, elements=1, atol=0, rtol=0,
                  bound_ratio=math.inf)
    fields = {"experiment": "demo", "title": "Demo", "gpu": GPU, "status": "ok", "source_hash": "abc",
              "provenance": Provenance(gpu=GPU, date="2026-11-21T00:00:00+00:00"),
              "rows": [KernelRow(name="k", case="1", params={}, status="failed", timed=False, check=check)]}
    return Record(**{**fields, **extra})


def test_gpu_slug():
    assert gpu_slug(GPU) == "nvidia-h100-80gb-hbm3"
    assert gpu_slug("NVIDIA H200") == "nvidia-h200"


def test_round_trip_keeps_non_finite_numbers(tmp_path):
    store = Store(tmp_path)
    path = store.write(record())
    assert path == tmp_path / "demo" / "nvidia-h100-80gb-hbm3.json"
    back = store.read("demo", GPU)
    assert back.rows[0].check.max_abs_err == math.inf and back == record()
    assert json.loads(path.read_text())["format"] == FORMAT  # strict JSON: no bare Infinity or NaN


@pytest.mark.parametrize("value", [math.nan, -math.inf, math.inf])
def test_each_non_finite_number_comes_back_wherever_it_stands(tmp_path, value):
    """Alone in a file too: it is read back however the file holds it."""
    write_json(tmp_path / "r.json", {"x": value, "rows": [[1.0, value], {"y": value}], "words": ["nan?", "info"]})
    back = read_json(tmp_path / "r.json")
    same = math.isnan if math.isnan(value) else (lambda v: v == value)
    assert same(back["x"]) and same(back["rows"][0][1]) and same(back["rows"][1]["y"])
    assert back["rows"][0][0] == 1.0 and back["words"] == ["nan?", "info"]


def test_files_are_sorted_and_diffable(tmp_path):
    write_json(tmp_path / "r.json", {"format": FORMAT, "b": 1, "a": [2, 1]})
    text = (tmp_path / "r.json").read_text()
    assert text.index('"a"') < text.index('"b"') < text.index('"format"') and text.endswith("\n")
    assert oct(os.stat(tmp_path / "r.json").st_mode & 0o777) == "0o644"


def test_results_keyed_by_gpu_live_side_by_side(tmp_path):
    store = Store(tmp_path)
    store.write(record())
    store.write(record(gpu="NVIDIA H200"))
    assert store.gpus("demo") == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]


def test_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    store = Store(tmp_path)
    path = store.write(record())
    before = path.read_text()

    def explode(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", explode)
    with pytest.raises(KeyboardInterrupt):
        store.write(record(source_hash="new"))
    assert path.read_text() == before
    assert list(path.parent.iterdir()) == [path], "the temporary file must be cleaned up"


def test_sigkill_during_writes_never_leaves_a_corrupt_file(tmp_path):
    """A writer killed at a random moment leaves a complete file, old or new."""
    target = tmp_path / "demo" / "gpu.json"
    write_json(target, {"format": FORMAT, "n": -1, "pad": "x" * 200_000})
    code = ("import sys; from pathlib import Path; from labnotebook.results.store import write_json\n"
            "from labnotebook.results.format import FORMAT\n"
            "i = 0\n"
            "while True:\n"
            "    write_json(Path(sys.argv[1]), {'format': FORMAT, 'n': i, 'pad': 'x' * 200_000, 'by': sys.argv[2]})\n"
            "    i += 1\n")
    for delay in (0.05, 0.13, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", code, str(target), str(delay)])
        while read_json(target).get("by") != str(delay):  # its first write done: from now on writes run continuously
            assert proc.poll() is None, "the writer died before it wrote"
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert read_json(target)["pad"] == "x" * 200_000


def test_corrupt_file_is_refused_with_a_fix(tmp_path):
    (tmp_path / "demo").mkdir()
    p = tmp_path / "demo" / "nvidia-h100-80gb-hbm3.json"
    p.write_text('{"format": "labnotebook-results/1", "rows": [')
    with pytest.raises(ResultsError, match="corrupt.*git checkout"):
        Store(tmp_path).read("demo", GPU)


def test_foreign_format_is_refused_with_a_fix(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"format": "asv/2", "rows": []}))
    with pytest.raises(ResultsError, match="format 'asv/2'.*--force"):
        read_record(p)
    p.write_text("[1, 2]")
    with pytest.raises(ResultsError, match="format 'list'"):
        read_record(p)
    p.write_text(json.dumps({"format": "labnotebook-results/99"}))
    with pytest.raises(ResultsError, match="newer than this notebook"):
        read_record(p)


def test_a_record_with_an_unknown_field_is_refused(tmp_path):
    """A typo in a field name is an error, not a silently ignored value."""
    data = record().to_json()
    data["rows"][0]["median"] = 1.0
    write_json(tmp_path / "x.json", data)
    with pytest.raises(ResultsError, match="no field.*median"):
        read_record(tmp_path / "x.json")


def test_failure_record_keeps_last_good_results_and_is_cleared_by_success(tmp_path):
    store = Store(tmp_path)
    good = store.write(record())
    before = good.read_text()
    store.write_failure(record(status="failed", error="nvcc failed", source_hash="def"))
    assert good.read_text() == before
    assert store.read_failure("demo", GPU).error == "nvcc failed"
    assert store.gpus("demo") == [GPU]  # the failure file is not a second GPU
    store.write(record(source_hash="def"))
    assert store.read_failure("demo", GPU) is None


def test_the_large_pass_has_files_of_its_own_that_the_main_pass_never_reads_or_removes(tmp_path):
    store = Store(tmp_path)
    main = store.write(record())
    main_failure = store.write_failure(record(error="boom"))
    large = store.write(record(part="large", title="Large"))
    assert large == tmp_path / "demo" / "nvidia-h100-80gb-hbm3.large.json"
    assert main_failure.exists()  # a large pass's success supersedes its own failures alone
    assert store.read("demo", GPU).title == "Demo" and store.read("demo", GPU, "large").title == "Large"
    assert [r.part for r in store.records()] == ["main"] and [r.part for r in store.records(part="large")] == ["large"]
    assert store.gpus("demo", failures=True) == [GPU]
    failed = store.write_failure(record(part="large", error="too big"))
    assert failed.name == "nvidia-h100-80gb-hbm3.large.failure.json" and large.exists() and main.exists()
    assert store.read_failure("demo", GPU, "large").error == "too big"


def test_a_file_of_one_pass_under_the_other_passs_name_is_refused(tmp_path):
    store = Store(tmp_path)
    path = store.write(record())
    path.rename(store.path("demo", GPU, part="large"))
    with pytest.raises(ResultsError, match="holds the main pass's results, not the large pass's"):
        store.read("demo", GPU, "large")


def test_a_file_is_listed_by_the_gpu_it_names_or_by_its_slug_where_it_is_not_ours(tmp_path):
    store = Store(tmp_path)
    store.write(record())
    write_json(tmp_path / "demo" / "nvidia-h200.json", {"format": "labnotebook-results/99", "gpu": "NVIDIA H200"})
    write_json(tmp_path / "demo" / "other-gpu.json", {"format": "someone-else/1", "gpu": "Other GPU"})
    assert store.gpus("demo") == [GPU, "nvidia-h200", "other-gpu"]
