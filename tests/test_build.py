"""build_results.py end to end on a pretend GPU (tests/fakegpu): workers, the scheduler over two
GPUs, verification, the failure policy and the store, exactly as on a real one, minus the timing.
The same fault suite runs for real in test_gpu.py."""

import json
import os
from datetime import datetime
import shutil
from pathlib import Path

import pytest

from labnotebook.results.format import Provenance, Record
from labnotebook.results.store import Store

from conftest import FAKEGPU, FAULTS, ROOT, copy_project, fake_bin, run_cli, run_cli_here

GPU = "NVIDIA Fake GPU"
FAULTY = ["wrong_answer", "launch_raises", "host_raises", "no_compile", "sneaky_read", "out_of_bounds"]


def fake_env():
    return {"PATH": f"{fake_bin()}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join([str(FAKEGPU), str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One build of a project with a good experiment beside every broken one, on two GPUs."""
    project = copy_project(tmp_path_factory.mktemp("fake"), [FAULTS / "snippets" / n for n in FAULTY])
    good = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "good_add")
    (good / "1_skips_last.cu").write_text((good / "1_skips_last.cu").read_text()
                                          .replace("i < n - 1", "i < n").replace("add_skip_last", "add"))
    (good / "experiment.py").write_text((good / "experiment.py").read_text().replace('"add_skip_last"', '"add"'))
    store = Store(project / "results")
    store.write(Record(experiment="wrong_answer", title="earlier", gpu=GPU, status="ok", rows=[],
                       provenance=Provenance(gpu=GPU, date="2026-01-01T00:00:00+00:00"), source_hash="earlier"))
    earlier = store.path("wrong_answer", GPU).read_text()
    proc = run_cli("--gpus", "all", root=project, env=fake_env())
    return project, store, proc, earlier


def test_faults_are_named_and_the_good_experiment_still_runs(built):
    project, store, proc, _ = built
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "✗ no_compile: nvcc failed" in out and "1_typo.cu(5)" in out
    assert "✗ wrong_answer: 1_skips_last @ small: wrong answer" in out
    assert "✗ out_of_bounds: kernel 1_oob left the CUDA context unusable" in out
    assert "✗ host_raises: 1_noop @ negative: host code inputs() raised ValueError" in out
    assert "✗ sneaky_read: compute-sanitizer: 1_reads_past_end: memcheck: 1 errors" in out
    assert "1 ran" in out and "6 failed" in out
    good = store.read("good_add", GPU)
    assert good.status == "ok" and all(v.errors == 0 for v in good.sanitizer["1_skips_last"].values())
    assert all(r.status == "ok" for r in good.rows) and good.rows[0].time and 0 < good.rows[0].check.bound_ratio <= 1


def test_one_launch_or_library_failing_leaves_the_rest_of_its_experiment_running(built):
    _, store, _, _ = built
    failure = store.read_failure("launch_raises", GPU)
    rows = {(r.name, r.case): r for r in failure.rows}
    assert rows[("1_add", "small")].status == "ok" and rows[("1_add", "small")].time
    assert rows[("numpy", "small")].status == "ok" and rows[("numpy", "small")].time
    assert rows[("2_overflows", "small")].error.startswith("launch() raised OverflowError")
    assert rows[("broken", "one")].error == "RuntimeError: the library refused the call"
    # A block CUDA refuses is named before anything launches; an empty grid is a declared skip.
    assert rows[("4_shared_48k", "small")].status == "ok"  # 48 KiB + static: opted in
    assert rows[("3_too_wide", "small")].status == "failed"
    assert rows[("3_too_wide", "small")].error.startswith("launch() raised InvalidLaunch: block (2048, 1, 1): "
                                                          "blockDim.x must be 1 to 1024")
    empty = rows[("1_add", "empty")]
    assert empty.status == "skipped" and "has no blocks: nothing to launch" in empty.error and not empty.unavailable
    assert rows[("numpy", "empty")].status == "ok" and rows[("numpy", "empty")].check.elements == 0
    # A tolerance that is a function of the case: each case's own bound, recorded with its row.
    half, exact = rows[("fp16", "small")], rows[("fp16", "one")]
    assert half.status == "ok" and (half.check.atol, half.check.rtol) == (1e-2, 1e-2)
    assert exact.status == "failed" and exact.error.startswith("wrong answer") and exact.check.atol == 0.0


def test_earlier_results_survive_a_failure_and_failures_hold_no_machine_paths(built):
    project, store, _, earlier = built
    assert store.path("wrong_answer", GPU).read_text() == earlier
    for name in FAULTY:
        text = store.path(name, GPU, failure=True).read_text()
        assert str(project) not in text and store.read_failure(name, GPU).error


def test_the_experiments_were_spread_over_both_gpus_and_the_ceiling_measured_on_each(built):
    _, store, proc, _ = built
    assert "GPU 0: start" in proc.stdout and "GPU 1: start" in proc.stdout
    ceilings = store.read("ceilings", GPU)
    for roof in ("copy", "fp32 fma"):
        assert sorted(r.params["device_index"] for r in ceilings.rows if r.name == roof) == [0, 1]
    fma = next(r for r in ceilings.rows if r.name == "fp32 fma")
    assert fma.flops == 2 * 8 * 2**16 * 132 * 2048 and fma.time.median_ms > 0
    indices = {store.read_failure(n, GPU).provenance.device_index for n in ("launch_raises", "wrong_answer")}
    assert indices <= {0, 1}


def test_each_verified_kernel_is_profiled_at_its_case_under_ncu(built):
    project, store, _, _ = built
    good = store.read("good_add", GPU)
    assert good.profile.status == "ok" and good.provenance.ncu == "2099.1.0.0"
    profile = good.profile.profiles["1_skips_last"]
    assert profile.case == "small" and [k.function for k in profile.launches] == ["add"]
    main = profile.main
    assert main.limiter == "memory" and main.duration_ns == 1234.5 and main.dram_gbs == 2500.0
    assert main.stalls == {"long_scoreboard": 0.75, "wait": 0.25}  # 'selected' is issuing, not a stall
    assert store.read_failure("wrong_answer", GPU).profile is None  # a run that failed is not profiled
    # A profile is keyed on the profiler pass besides its record's own key.
    from labnotebook.results.freshness import CurrentKeys, Stored

    assert good.profile.sources == CurrentKeys(project).profiler.files
    assert Stored.read(store, "good_add", GPU, CurrentKeys(project)).profile_state == "fresh"
    # It says when it was taken, and at which commit: after its run, at the run's commit.
    assert datetime.fromisoformat(good.profile.date) >= datetime.fromisoformat(good.provenance.date)
    assert good.profile.git_commit == good.provenance.git_commit


def without(tool: str, tmp: Path) -> dict:
    """fake_env with every stand-in command but ``tool``."""
    bin_ = tmp / "bin"
    bin_.mkdir()
    for cmd in fake_bin().iterdir():
        if cmd.name != tool:
            (bin_ / cmd.name).symlink_to(cmd)
    env = fake_env()
    env["PATH"] = env["PATH"].replace(str(fake_bin()), str(bin_))
    return env


def test_each_record_says_what_its_refresh_cost_by_phase(built):
    """wall_s is the whole refresh (the passes included); phases_s splits it, start-up being the
    worker's time its own clock did not see."""
    from labnotebook.results.format import REFRESH_PHASES

    _, store, proc, _ = built
    good = store.read("good_add", GPU)
    assert set(good.phases_s) <= set(REFRESH_PHASES)
    assert {"start-up", "compile", "inputs", "verify", "timing", "edge cases", "sanitizer",
            "profile"} <= set(good.phases_s)
    assert all(s >= 0 for s in good.phases_s.values())
    passes = ("sanitizer", "profile")  # on two GPUs these may run side by side
    assert good.wall_s >= max(good.phases_s[p] for p in passes) > 0
    assert sum(s for p, s in good.phases_s.items() if p not in passes) + max(good.phases_s[p] for p in passes) \
        <= good.wall_s + 0.1
    ceilings = store.read("ceilings", GPU)
    assert ceilings.wall_s > 0 and set(ceilings.phases_s) == {"start-up", "timing"}
    failed = store.read_failure("wrong_answer", GPU)  # a failed run keeps its cost too
    assert failed.wall_s > 0 and "verify" in failed.phases_s and "sanitizer" not in failed.phases_s
    assert "sum of wall times" in proc.stdout and "good_add" in proc.stdout


def test_without_ncu_the_profile_is_recorded_as_skipped_and_no_profile_records_none(built, tmp_path):
    project, store, _, _ = built
    proc = run_cli("--only", "good_add", "--force", "--no-sanitize", root=project, env=without("ncu", tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Nsight Compute (ncu) not found" in proc.stdout
    profile = store.read("good_add", GPU).profile
    assert profile.status == "skipped" and "not found" in profile.reason and not profile.profiles
    proc = run_cli("--only", "good_add", "--force", "--no-sanitize", "--no-profile", root=project, env=fake_env())
    assert proc.returncode == 0 and store.read("good_add", GPU).profile is None


def test_a_rerun_profiles_fresh_results_that_lack_a_profile_and_then_runs_nothing(built):
    project, store, _, _ = built
    before = store.read("good_add", GPU)
    assert before.profile is None  # the last build of it ran with --no-profile
    again = run_cli("--only", "good_add", root=project, env=fake_env())
    assert again.returncode == 0 and "1 profiled" in again.stdout and "timed run" not in again.stdout, again.stdout
    after = store.read("good_add", GPU)
    assert after.profile.status == "ok" and after.rows == before.rows and after.provenance.date == before.provenance.date
    assert after.wall_s == round(before.wall_s + after.phases_s["profile"], 2) and after.phases_s["profile"] > 0
    third = run_cli("--only", "good_add", root=project, env=fake_env())
    assert third.returncode == 0 and "unchanged" in third.stdout and "start" not in third.stdout


def test_each_record_and_profile_is_keyed_on_the_files_it_was_measured_from(built):
    from labnotebook.results.freshness import CurrentKeys, Stored

    project, store, _, _ = built
    keys = CurrentKeys(project)
    good = store.read("good_add", GPU)
    assert good.source_hash == keys["good_add"].digest and good.sources == keys["good_add"].files
    assert "snippets/good_add/1_skips_last.cu" in good.sources and "labnotebook/run/protocol/timing.py" in good.sources
    ceilings = store.read("ceilings", GPU)
    assert ceilings.sources == keys["ceilings"].files and "labnotebook/run/fma_peak.cu" in ceilings.sources
    assert Stored.read(store, "good_add", GPU, keys).state == "fresh"
    failure = store.read_failure("wrong_answer", GPU)  # a failure is keyed too: it is failed only while current
    assert failure.source_hash == keys["wrong_answer"].digest


def test_the_fast_loop_prints_one_kernel_at_one_case_and_writes_nothing(built):
    project, store, _, _ = built
    before = store.path("good_add", GPU).read_text()
    proc = run_cli("--only", "launch_raises", "--kernel", "1_add", "--case", "small", root=project, env=fake_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1_add" in proc.stdout and "dry run" in proc.stdout and "2_overflows" not in proc.stdout
    assert store.path("good_add", GPU).read_text() == before
    proc = run_cli("--only", "launch_raises", "--case", "huge", root=project, env=fake_env())
    assert proc.returncode == 1 and "has no case huge" in proc.stdout


def test_racecheck_runs_the_kernels_with_shared_memory_alone_and_says_why_not_the_others(tmp_path):
    """racecheck checks shared memory and nothing else: the kernel without any gets a verdict that
    says so (not a clean run it never had), and racecheck runs the two others, each in a worker
    of its own; every tool runs each kernel at the cheapest edge cases that together take every
    path it takes (the experiment's, and the second kernel's own, for which one case takes the
    place of another)."""
    project = copy_project(tmp_path / "p", [])
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "two_adds")
    plain = (folder / "1_skips_last.cu").read_text().replace("i < n - 1", "i < n").replace("add_skip_last", "add")
    (folder / "1_skips_last.cu").unlink()
    (folder / "1_add.cu").write_text(plain)
    staged = plain.replace("{\n", "{\n    __shared__ float staged[256];\n", 1)
    (folder / "2_staged.cu").write_text(staged.replace("void add(", "void add_again("))
    (folder / "3_staged.cu").write_text(staged.replace("void add(", "void add_shared("))
    (folder / "experiment.py").write_text((folder / "experiment.py").read_text().replace(
        'kernels=[Kernel("1_skips_last.cu", "add_skip_last", launch)]',
        'kernels=[Kernel("1_add.cu", "add", launch), Kernel("2_staged.cu", "add_again", launch,'
        ' paths=lambda case: ["three" if case.n == 3 else "not three"]),'
        ' Kernel("3_staged.cu", "add_shared", launch)]').replace(
        'edge_cases=[Case("one", n=1)]',
        'edge_cases=[Case("257", n=257), Case("one", n=1), Case("3", n=3)],\n'
        '    paths=lambda case: ["ragged" if case.n % 256 else "whole", "blocks" if case.n > 256 else "block"]'))
    log = tmp_path / "sanitizer.log"
    proc = run_cli("--only", "two_adds", "--no-profile", root=project,
                   env={**fake_env(), "FAKE_SANITIZER_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stored = Store(project / "results").read("two_adds", GPU)
    verdicts = stored.sanitizer
    assert set(stored.sanitizer_s) == {"memcheck", "synccheck", "initcheck", "racecheck 2_staged", "racecheck 3_staged"}
    assert not verdicts["1_add"]["racecheck"].checked and "no shared memory" in verdicts["1_add"]["racecheck"].first
    assert all(verdicts[k]["racecheck"].checked and verdicts[k]["racecheck"].errors == 0
               for k in ("2_staged", "3_staged"))
    assert all(v.checked and v.errors == 0 for k in verdicts for t, v in verdicts[k].items() if t != "racecheck")
    ran = [line.split("\t") for line in log.read_text().splitlines()]
    assert sorted(t for t, _, _ in ran) == ["initcheck", "memcheck", "racecheck", "racecheck", "synccheck"]
    racecheck = {program.rsplit(" ", 1)[1]: pairs for t, program, pairs in ran if t == "racecheck"}
    assert all("--kernel" in program and "--paths-cover" in program for t, program, _ in ran if t == "racecheck")
    assert racecheck == {"2_staged": "257:2_staged,3:2_staged", "3_staged": "257:3_staged,one:3_staged"}
    assert all("--kernel" not in program and "--paths-cover" in program for t, program, _ in ran if t != "racecheck")
    every = "257:1_add,257:2_staged,257:3_staged,one:1_add,one:3_staged,3:2_staged"
    assert {t: pairs for t, _, pairs in ran if t != "racecheck"} == {t: every for t in ("memcheck", "synccheck", "initcheck")}


def test_a_build_leaves_a_draft_out_until_it_is_named(tmp_path):
    project = copy_project(tmp_path / "p", [])
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "draft_add")
    (folder / "1_skips_last.cu").write_text((folder / "1_skips_last.cu").read_text()
                                            .replace("i < n - 1", "i < n").replace("add_skip_last", "add"))
    (folder / "experiment.py").write_text((folder / "experiment.py").read_text().replace('"add_skip_last"', '"add"'))
    (project / "docs").mkdir(exist_ok=True)
    (project / "docs" / "draft_add.md").write_text("---\ntitle: A draft\ndraft: true\n---\n")
    store = Store(project / "results")
    proc = run_cli("--force", "--no-sanitize", "--no-profile", root=project, env=fake_env())
    assert proc.returncode == 0 and "drafts left out (name one with --only to run it): draft_add" in proc.stdout, \
        proc.stdout + proc.stderr
    assert store.read("draft_add", GPU) is None
    proc = run_cli("--only", "draft_add", "--no-sanitize", "--no-profile", root=project, env=fake_env())
    assert proc.returncode == 0 and "left out" not in proc.stdout and store.read("draft_add", GPU).status == "ok"


def test_the_large_cases_run_in_a_pass_of_their_own_verified_alone(tmp_path):
    """A default build leaves an experiment's large cases out; ``--large`` runs them alone
    (verified, not timed, no ceiling, sanitizer or profile) into a file of their own, once."""
    project = copy_project(tmp_path / "p", [])
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "big_add")
    (folder / "1_skips_last.cu").write_text((folder / "1_skips_last.cu").read_text()
                                            .replace("i < n - 1", "i < n").replace("add_skip_last", "add"))
    (folder / "experiment.py").write_text((folder / "experiment.py").read_text().replace('"add_skip_last"', '"add"')
                                          .replace('    edge_cases=', '    large_cases=[Case("big", n=3000)],\n    edge_cases='))
    store = Store(project / "results")
    proc = run_cli("--force", root=project, env=fake_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    main = store.read("big_add", GPU)
    assert {r.case for r in main.rows} == {"small", "one"} and main.sanitizer and main.profile
    assert store.read("big_add", GPU, "large") is None
    main_file = store.path("big_add", GPU).read_text()
    proc = run_cli("--large", root=project, env=fake_env())
    assert proc.returncode == 0 and "the large pass" in proc.stdout, proc.stdout + proc.stderr
    assert "copy ceiling" not in proc.stdout and "compute-sanitizer" not in proc.stdout
    large = store.read("big_add", GPU, "large")
    assert large.part == "large" and [(r.case, r.timed, r.status) for r in large.rows] == [("big", False, "ok")]
    assert large.sanitizer is None and large.profile is None and large.ceiling is None
    assert "large cases" in large.phases_s and large.wall_s > 0 and large.source_hash == main.source_hash
    assert store.path("big_add", GPU).read_text() == main_file  # the main pass's file untouched
    again = run_cli("--large", root=project, env=fake_env())
    assert again.returncode == 0 and "0 ran, 1 unchanged" in again.stdout, again.stdout
    proc = run_cli("--only", "big_add", "--case", "big", root=project, env=fake_env())  # the fast loop reaches it
    assert proc.returncode == 0 and "big" in proc.stdout and "2 results" not in proc.stdout, proc.stdout


def test_an_interrupted_build_leaves_no_worker_behind(tmp_path):
    """`timeout` or Ctrl-C stops the build and its workers (each in a session of its own)."""
    import signal
    import subprocess
    import sys
    import time

    project = copy_project(tmp_path, [FAULTS / "snippets" / "hang"])
    proc = subprocess.Popen([sys.executable, str(ROOT / "build_results.py"), "--root", str(project)],
                            env={**os.environ, **fake_env()}, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "start hang" in line:
            break
    time.sleep(1.0)  # the worker is inside the kernel now
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 130
    time.sleep(0.5)
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if worker_of(p, project)], "a worker outlived the build"


def worker_of(cmdline: Path, project) -> bool:
    try:
        args = cmdline.read_bytes().split(b"\0")
    except OSError:  # the process ended while we looked
        return False
    forked = b"labnotebook.run.forkserver" in args  # a fork server, or a worker forked from one
    return (b"labnotebook.run.worker" in args or forked) and str(project).encode() in args



DYING_WORKER = """
import json, sys
from pathlib import Path
args = sys.argv[1:]
names = args[args.index("labnotebook.run.worker") + 1:args.index("--root")]
out = Path(args[args.index("--out") + 1])
for name in names:
    if name == "b":
        print("Segmentation fault in b")
        sys.exit(139)
    out.joinpath(name + ".json").write_text(json.dumps({"ranges": {}, "cases": {}, "skipped": {}, "seconds": 0.01}))
"""


def test_a_profile_session_that_dies_fails_that_experiment_alone_and_a_new_one_profiles_the_rest(tmp_path, monkeypatch):
    import io
    import sys

    from rich.console import Console

    from labnotebook.build import ncu as profile
    from labnotebook.build.plan import Options
    from labnotebook.build.processes import Processes
    from labnotebook.build.profiling import Profiling
    from labnotebook.build.records import Recorder
    from labnotebook.build.workers import Workers
    from labnotebook.results.freshness import CurrentKeys

    script = tmp_path / "worker.py"
    script.write_text(DYING_WORKER)
    monkeypatch.setattr(profile, "command", lambda worker, report: [sys.executable, str(script), *worker])
    console, keys = Console(file=io.StringIO()), CurrentKeys(tmp_path)
    workers = Workers(tmp_path, Processes(), tmp_path, [0], console)
    recorder = Recorder(Store(tmp_path / "results"), console, keys, Options(), GPU)
    profiling = Profiling(workers, recorder, keys, console, [0], ncu_version=None)
    for name in "abc":
        profiling.later(name, Record(experiment=name, title=name, gpu=GPU, provenance=None, rows=[], status="ok"))
    monkeypatch.setattr(Profiling, "time_limit", lambda self, name: 60)
    results = profiling.session(["a", "b", "c"], 0)
    assert [results[n][0].status for n in "abc"] == ["ok", "failed", "ok"]
    assert results["b"][0].reason == "the worker did not finish under ncu: Segmentation fault in b"
    # Each one's seconds: its own part and a share of its session's start-up.
    assert results["a"][1] > 0.01 and results["c"][1] > 0.01 and results["b"][1] > 0


def test_the_profile_sessions_share_the_experiments_out_so_that_they_end_together(tmp_path):
    """Longest first, each to the GPU with the least so far, whichever GPU timed it."""
    import io

    from rich.console import Console

    from labnotebook.build.plan import Options
    from labnotebook.build.processes import Processes
    from labnotebook.build.profiling import Profiling
    from labnotebook.build.records import Recorder
    from labnotebook.build.workers import Workers
    from labnotebook.results.freshness import CurrentKeys

    console, keys = Console(file=io.StringIO()), CurrentKeys(tmp_path)
    profiling = Profiling(Workers(tmp_path, Processes(), tmp_path, [0, 1], console),
                          Recorder(Store(tmp_path / "results"), console, keys, Options(), GPU), keys, console,
                          [0, 1], ncu_version=None)
    for name, seconds in (("a", 15.0), ("b", 30.0), ("c", 20.0), ("d", 4.0)):
        profiling.later(name, Record(experiment=name, title=name, gpu=GPU, provenance=None, rows=[], status="ok",
                                     phases_s={"profile": seconds}))
    assert {job.gpu: (job.label, job.estimate_s) for job in profiling.jobs()} == {
        0: ("profile: b, d", 34.0), 1: ("profile: c, a", 35.0)}


def test_a_profile_pass_that_lost_a_gpu_kernel_says_which_and_why_but_not_for_a_cpu_baseline():
    from labnotebook.build.profiling import unprofiled
    from labnotebook.results.format import Profile, ProfilePass
    from labnotebook.results.rows import BaselineRow, KernelRow

    rows = [KernelRow(name="1_tile", case="c", params={}, status="ok", timed=True),
            BaselineRow(name="numpy", case="c", params={}, status="ok", timed=True, device="cpu")]
    record = Record(experiment="x", title="x", gpu=GPU, provenance=None, rows=rows, status="ok")
    record.profile = ProfilePass("ok", profiles={
        "1_tile": Profile("c", error="requires cuda.tile, which is not installed"),
        "numpy": Profile("c", error="runs on the CPU: no GPU kernel to profile")})
    assert unprofiled(record) == {"1_tile": "requires cuda.tile, which is not installed"}


def test_a_profile_is_keyed_by_the_rule_its_record_is_judged_by(tmp_path):
    """A record keyed by the older rule gets its profile's hashes by that rule too, or the profile
    would read as stale at once and be taken again at every build."""
    import io

    from rich.console import Console

    from labnotebook.build.plan import Options
    from labnotebook.build.processes import Processes
    from labnotebook.build.profiling import Profiling
    from labnotebook.build.records import Recorder
    from labnotebook.build.workers import Workers
    from labnotebook.results.format import ProfilePass
    from labnotebook.results.freshness import CurrentKeys

    console, keys, store = Console(file=io.StringIO()), CurrentKeys(tmp_path), Store(tmp_path / "results")
    profiling = Profiling(Workers(tmp_path, Processes(), tmp_path, [0], console),
                          Recorder(store, console, keys, Options(), GPU), keys, console, [0], ncu_version=None)
    for name, rule in (("old", "text"), ("new", "meaning")):
        profiling.later(name, Record(experiment=name, title=name, gpu=GPU, provenance=None, rows=[], status="ok",
                                     key_rule=rule))
        profiling.add(name, ProfilePass("ok"), 1.0, 0)
        assert store.read(name, GPU).profile.sources == keys.profiler.files_by(rule)
    assert keys.profiler.files_by("text") != keys.profiler.files_by("meaning")


def test_a_run_held_back_for_what_its_machine_lacked_is_accepted_without_running_again(tmp_path):
    """A run that could only skip, for want of a module, what the last results verified is kept
    beside them as a failure; ``--accept`` puts it in their place as ``--force`` would have, with
    no GPU, where it failed for nothing else and its files are still the experiment's, and
    refuses, changing nothing, where it failed for more or where the files have moved on."""
    project = copy_project(tmp_path / "p", [])
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "held")
    (folder / "1_skips_last.cu").write_text((folder / "1_skips_last.cu").read_text()
                                            .replace("i < n - 1", "i < n").replace("add_skip_last", "add"))
    (folder / "experiment.py").write_text((folder / "experiment.py").read_text().replace('"add_skip_last"', '"add"'))
    store = Store(project / "results")
    assert run_cli("--only", "held", "--no-sanitize", "--no-profile", root=project, env=fake_env()).returncode == 0
    verified = store.path("held", GPU).read_text()
    declaration = (folder / "experiment.py").read_text()
    (folder / "experiment.py").write_text(declaration.replace("    title=", '    requires=("no_such_module",),\n    title='))
    proc = run_cli("--only", "held", "--no-sanitize", "--no-profile", root=project, env=fake_env())
    assert proc.returncode == 1 and "keeping those results" in proc.stdout, proc.stdout
    assert store.path("held", GPU).read_text() == verified and store.read_failure("held", GPU) is not None
    run = store.path("held", GPU, failure=True).read_text()

    (folder / "experiment.py").write_text(declaration.replace("    title=", '    requires=("other_module",),\n    title='))
    proc = run_cli_here("--accept", "held", root=project)
    assert proc.returncode == 1 and "not accepted held on" in proc.stdout and "other files" in proc.stdout, proc.stdout
    assert store.path("held", GPU).read_text() == verified and store.path("held", GPU, failure=True).read_text() == run

    (folder / "experiment.py").write_text(declaration.replace("    title=", '    requires=("no_such_module",),\n    title='))
    proc = run_cli_here("--accept", "held", root=project)
    assert proc.returncode == 0 and "accepted held on" in proc.stdout and "no_such_module" in proc.stdout, proc.stdout
    kept = store.read("held", GPU)
    assert kept.status == "ok" and not kept.problems and store.read_failure("held", GPU) is None
    assert all(r.status == "skipped" and r.unavailable for r in kept.rows if r.kind == "kernel")
    assert kept.provenance.date == json.loads(run)["provenance"]["date"]  # the run as it was, not a new one
    assert "fresh" in run_cli_here("--list", root=project).stdout.split("held")[1].splitlines()[0]


def test_a_run_that_failed_for_more_than_what_its_machine_lacked_is_not_accepted(built):
    """A wrong answer, or a sanitizer's finding, is never accepted."""
    project, store, _, _ = built
    before = store.path("wrong_answer", GPU).read_text()
    proc = run_cli_here("--accept", "wrong_answer", root=project)
    assert proc.returncode == 1 and "not accepted wrong_answer" in proc.stdout and "wrong answer" in proc.stdout
    assert store.path("wrong_answer", GPU).read_text() == before and store.read_failure("wrong_answer", GPU)
    proc = run_cli_here("--accept", "sneaky_read", root=project)  # every row verified; memcheck found a bad read
    assert proc.returncode == 1 and "not held back for what it could not run here" in proc.stdout, proc.stdout
    assert store.read_failure("sneaky_read", GPU) is not None


def test_a_long_run_is_split_by_cases_over_both_gpus_and_a_part_that_dies_fails_it(tmp_path):
    """Alone in its build, a run with no last one to go by (estimated at a minute) is split over
    the two GPUs: each part a worker of its own, with its cases and its GPU's ceiling, merged
    into one record, sanitized and profiled once. A part whose worker dies fails the run, and
    the last good results stay."""
    import dataclasses
    import re

    project = copy_project(tmp_path / "p", [])
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "split_add")
    (folder / "1_skips_last.cu").write_text((folder / "1_skips_last.cu").read_text()
                                            .replace("i < n - 1", "i < n").replace("add_skip_last", "add"))
    (folder / "experiment.py").write_text(
        "import os\n\n\ndef crash(case):\n    if case.name == os.environ.get('FAKE_CRASH_AT'):\n        os._exit(3)\n\n\n"
        + (folder / "experiment.py").read_text().replace('"add_skip_last"', '"add"')
        .replace('cases=[Case("small", n=1000)]',
                 'cases=[Case("small", n=1000), Case("mid", n=2000), Case("big", n=4000)]')
        .replace("inputs=lambda case, rng: ", "inputs=lambda case, rng: crash(case) or "))
    store = Store(project / "results")
    proc = run_cli("--gpus", "all", root=project, env=fake_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "split_add: split into 2 parts by cases, each on a GPU of its own: part 1: small, mid, one; part 2: big" \
        in out, out
    assert re.search(r"GPU [01]: done  split_add: timed run, part 1 of 2 \(\d+\.\d s\)", out)
    assert re.search(r"GPU [01]: done  split_add: timed run, part 2 of 2 \(\d+\.\d s\)", out)
    record = store.read("split_add", GPU)
    assert [r.case for r in record.rows] == ["small", "mid", "big", "one"]
    assert [p.cases for p in record.split] == [["small", "mid", "one"], ["big"]]
    assert {p.device_index for p in record.split} <= {0, 1}  # both on GPU 0 where GPU 1 was still busy
    assert record.provenance.device_index == record.split[0].device_index
    copy = {r.params["device_index"]: r for r in store.read("ceilings", GPU).rows if r.name == "copy"}
    for part in record.split:  # each part was told its own GPU's ceiling
        assert part.ceiling.median_ms == copy[part.device_index].time.median_ms
    assert re.search(r"split: part 1 on GPU [01] \(\d+\.\d s\), part 2 on GPU [01] \(\d+\.\d s\)", out), out
    assert record.sanitizer and all(v.errors == 0 for v in record.sanitizer["1_skips_last"].values())
    assert record.profile.status == "ok" and out.count("start profile: split_add") == 1
    assert record.wall_s >= sum(p.wall_s for p in record.split)

    store.write(dataclasses.replace(record, wall_s=100.0))  # long enough to be split again
    before = store.path("split_add", GPU).read_text()
    proc = run_cli("--gpus", "all", "--force", "--no-sanitize", "--no-profile", root=project,
                   env={**fake_env(), "FAKE_CRASH_AT": "big"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"✗ split_add: part [12] of 2, on GPU [01]: worker exited with status 3", proc.stdout), \
        proc.stdout
    assert store.path("split_add", GPU).read_text() == before
    failure = store.read_failure("split_add", GPU)
    assert failure.rows == [] and "worker exited with status 3" in failure.error
