"""The results format: typed records, and old files brought up to date on load without a GPU."""

import json
import shutil
import math
from pathlib import Path

import pytest

from labnotebook.results.format import FORMAT, VERSION, KernelProfile, Profile, ProfilePass
from labnotebook.results.migrations import migrate
from labnotebook.results.store import ARCHITECTURES, Store, read_json, read_record, write_json

V1 = Path(__file__).parent / "fixtures" / "results-v1"
V2 = Path(__file__).parent / "fixtures" / "results-v2"
V3 = Path(__file__).parent / "fixtures" / "results-v3"
FILES = sorted(V1.glob("*/*.json"))
RESULTS = sorted(p for p in (Path(__file__).parent.parent / "results").glob("*/*.json")
                 if p.parent.name != ARCHITECTURES)  # not records: results/architectures.py


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_a_format_1_file_loads_through_the_migration(path):
    raw = read_json(path)
    assert raw["format"] == "labnotebook-results/1"
    record = read_record(path)
    assert record.provenance.device_index is None  # not recorded by format 1
    assert all(k.language in ("cuda", "python") for k in record.kernels.values())
    # Every figure survives: the same medians, errors and statuses, row for row.
    assert [(r.name, r.case, r.status, r.median_ms) for r in record.rows] == \
        [(r["name"], r["case"], r["status"], (r.get("time") or {}).get("median_ms")) for r in raw["rows"]]
    for row, old in zip(record.rows, raw["rows"]):
        if "check" in old:
            assert row.check.max_abs_err == old["check"]["max_abs_err"]


def test_the_bound_ratio_is_recovered_where_the_file_allows():
    record = read_record(V1 / "vec_add_3d" / "nvidia-h200.json")  # bit-exact tolerance: ratio 0
    assert all(r.check.bound_ratio == 0.0 for r in record.rows if r.check and r.status == "ok")
    record = read_record(V1 / "block_reduce" / "nvidia-h100-80gb-hbm3.json")  # rtol: unknowable
    assert any(r.check.bound_ratio is None for r in record.rows if r.check and r.check.max_abs_err)


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_a_migrated_record_round_trips_in_the_current_format(path, tmp_path):
    record = read_record(path)
    store = Store(tmp_path)
    written = store.write(record)
    assert json.loads(written.read_text())["format"] == FORMAT
    assert store.read(record.experiment, record.gpu) == record


@pytest.mark.parametrize("path", RESULTS, ids=[f"{p.parent.name}/{p.name}" for p in RESULTS])
def test_every_results_file_reads_and_writes_back_to_the_same_bytes(path, tmp_path):
    """Each row read as its kind's type and written back gives the file it came from, byte for
    byte, but for the format's name and the fields of later versions, absent (null) in it."""
    as_it_was = json.loads(path.read_text())
    written = read_record(path).to_json()
    write_json(tmp_path / "as_it_was.json", {**_with_nulls(as_it_was, written), "format": FORMAT})
    write_json(tmp_path / path.name, written)
    assert (tmp_path / path.name).read_bytes() == (tmp_path / "as_it_was.json").read_bytes()


def _with_nulls(old, new):
    """``old`` with the keys only ``new`` has, where ``new`` holds them as null."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**{k: None for k, v in new.items() if k not in old and v is None},
                **{k: _with_nulls(v, new.get(k)) for k, v in old.items()}}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [_with_nulls(o, n) for o, n in zip(old, new)]
    return old


def test_migrations_reach_the_current_version_from_every_older_one():
    data = migrate({"format": "labnotebook-results/1", "rows": [], "kernels": {}, "provenance": {}})
    assert data["provenance"]["device_index"] is None
    assert FORMAT.endswith(f"/{VERSION}")  # and every migration on the way ran:
    assert data["key_rule"] == "text"  # judged by its bytes until --rekey
    assert read_record_data(data).machine is None


def read_record_data(data: dict):
    from labnotebook.results.format import Record
    return Record.from_json({**data, "format": FORMAT, "experiment": "x", "title": "x", "gpu": "g",
                             "provenance": None, "status": "ok"})


def test_a_format_2_file_loads_with_no_profile_pass_and_round_trips(tmp_path):
    path = V2 / "vec_add" / "nvidia-h200.json"
    assert read_json(path)["format"] == "labnotebook-results/2"
    record = read_record(path)
    assert record.profile is None and record.provenance.ncu is None
    store = Store(tmp_path)
    store.write(record)
    assert store.read(record.experiment, record.gpu) == record


def test_a_profile_pass_round_trips_and_names_each_kernels_limiter(tmp_path):
    record = read_record(V2 / "vec_add" / "nvidia-h200.json")
    memory = KernelProfile("vec_add", duration_ns=2000.0, memory_pct=91.0, sm_pct=20.0, stalls={"long_scoreboard": 0.8})
    small = KernelProfile("tail", duration_ns=10.0, memory_pct=5.0, sm_pct=3.0)
    record.profile = ProfilePass("ok", profiles={"1_add": Profile("2^28", launches=[small, memory]),
                                                 "cpu": Profile("2^28", error="runs on the CPU")})
    store = Store(tmp_path)
    store.write(record)
    back = store.read(record.experiment, record.gpu)
    assert back == record
    one = back.profile.profiles["1_add"]
    assert one.main.function == "vec_add" and one.duration_ns == 2010.0
    assert (memory.limiter, small.limiter) == ("memory", "latency")
    assert KernelProfile("mma", memory_pct=40.0, sm_pct=75.0).limiter == "compute"
    assert back.profile.profiles["cpu"].main is None


def test_optional_row_fields_are_left_out_of_files():
    record = read_record(V1 / "vec_add_3d" / "nvidia-h200.json")
    row = record.to_json()["rows"][0]
    assert "missing_module" not in row and "unavailable" not in row and "verify_s" not in row
    assert row["kind"] == "kernel" and not math.isnan(row["time"]["median_ms"])


def test_a_format_3_file_keeps_its_profile_reads_stale_and_says_why(tmp_path):
    """Format 4 keys results by file; a file of format 3 (a real H100 run) loads, keeps its
    numbers and profile, and reads as stale, saying it records no per-file hashes."""
    from conftest import ROOT
    from labnotebook.results.freshness import CurrentKeys, Stored

    path = V3 / "matrix_add_2d" / "nvidia-h100-80gb-hbm3.json"
    assert read_json(path)["format"] == "labnotebook-results/3"
    record = read_record(path)
    assert record.sources == {} and record.profile.status == "ok" and record.profile.sources == {}
    store = Store(tmp_path)
    store.write(record)
    assert store.read(record.experiment, record.gpu) == record
    stored = Stored.read(store, record.experiment, record.gpu, CurrentKeys(ROOT))
    assert stored.state == "stale" and "format 3 or older" in stored.reason()
    assert stored.profile_state == "stale"


V4 = Path(__file__).parent / "fixtures" / "results-v4"


def test_a_format_4_file_keeps_its_run_time_as_the_timed_run_and_has_no_wall_time():
    path = V4 / "coalescing" / "nvidia-h100-80gb-hbm3.json"
    raw = read_json(path)
    assert raw["format"] == "labnotebook-results/4"
    record = read_record(path)
    assert record.wall_s is None and record.phases_s == {"timed run": raw["duration_s"]}
    assert [(r.name, r.case, r.median_ms) for r in record.rows] == \
        [(r["name"], r["case"], (r.get("time") or {}).get("median_ms")) for r in raw["rows"]]


def test_a_format_4_page_renders_unchanged_once_its_files_are_rewritten_in_the_current_format(tmp_path):
    """The entry and the dashboard, built from format-4 files and from the same records written
    as format 5, are the same HTML: the migration loses nothing a page shows."""
    from site_support import build, project

    from labnotebook.results.freshness import CurrentKeys

    root = project(tmp_path / "p", pages=["coalescing.md", "dashboard.md"], results=False,
                   entries=["coalescing.md"], top=("dashboard.md",))
    shutil.copytree(V4, root / "results")
    keys = CurrentKeys(root)
    for path in (root / "results").glob("*/*.json"):  # keyed on today's sources, still format 4
        raw = read_json(path)
        raw["source_hash"], raw["sources"] = keys[path.parent.name].digest, dict(keys[path.parent.name].files)
        raw.pop("profile", None)  # its own key is the profiler's: not what this test is about
        path.write_text(json.dumps(raw))

    def pages():
        built = build(root)
        assert built.ok, built.error
        return {p: (built.site / p / "index.html").read_text() for p in ("coalescing", "dashboard")}
    before = pages()
    assert "ran in" in before["coalescing"] and "GB/s" in before["coalescing"]
    store = Store(root / "results")
    for path in (root / "results").glob("*/*.json"):
        written = store.write(read_record(path))
        assert read_json(written)["format"] == FORMAT
    assert pages() == before


def format_1(**fields) -> dict:
    return migrate({"format": "labnotebook-results/1", "rows": [], "kernels": {}, "provenance": None, **fields})


def test_a_format_1_check_gets_the_bound_ratio_its_tolerance_allows():
    """Exact rows had a ratio of 0; under an absolute tolerance alone the bound is atol at every
    element, so the ratio is the worst error over atol; any other bound depended on the
    reference, which the file does not keep."""
    def ratio(max_abs_err, atol, rtol):
        row = {"check": {"max_abs_err": max_abs_err, "atol": atol, "rtol": rtol}}
        return format_1(rows=[row])["rows"][0]["check"]["bound_ratio"]
    assert ratio(0.0, 0.0, 1e-4) == 0.0
    assert ratio(2.5e-4, 1e-3, 0.0) == 0.25
    assert ratio(2.5e-4, 1e-3, 1e-4) is None
    assert ratio(2.5e-4, 0.0, 0.0) is None
    assert "check" not in format_1(rows=[{"name": "untimed"}])["rows"][0]


def test_a_format_1_file_without_provenance_or_run_time_migrates_to_nothing_invented():
    """Format 1 named only Python kernels' language; a failure may have no provenance and a file
    no run time: each comes through as absent, never as a made-up value."""
    data = format_1(kernels={"1_add": {}, "2_triton": {"language": "python"}})
    assert {n: k["language"] for n, k in data["kernels"].items()} == {"1_add": "cuda", "2_triton": "python"}
    assert data["provenance"] is None
    assert (data["wall_s"], data["phases_s"], data["part"]) == (None, {}, "main")
