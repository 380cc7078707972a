"""Each kernel's needs, and the architecture mode (``build_results.py --arch``) end to end on the
pretend GPU (a 9.0): what runs as an older GPU would, what is unavailable there and why, and
that none of it is ever read as a GPU's results."""

import json

import pytest

from labnotebook.results import architectures
from labnotebook.results.store import Store
from labnotebook.run.needs import ARCHITECTURES, BadNeeds, Needs, declared

from conftest import ROOT, copy_project, run_cli
from test_build import fake_env

FIXTURE = ROOT / "tests" / "fixtures" / "architectures" / "snippets" / "portable"


def test_a_needs_line_says_what_a_kernel_needs_and_which_architectures_it_claims():
    assert declared("// Rung 1.\nextern \"C\" __global__ void k() {}\n") == Needs("sm_75", "")
    clusters = declared("// Rung 9.\n// needs: sm_90 (thread-block clusters)\n#include <x.h>\n")
    assert clusters == Needs("sm_90", "thread-block clusters")
    assert clusters.unmet((8, 6)) == ("needs compute capability 9.0 or newer: thread-block clusters; "
                                      "this GPU is 8.6")
    assert clusters.unmet((9, 0)) is None and clusters.unmet((12, 0)) is None
    assert clusters.claims() == ["sm_90", "sm_100", "sm_120"]
    hopper = declared("// needs: sm_90a (wgmma)\n")
    assert hopper.unmet((10, 0)) == "needs compute capability 9.0 exactly (sm_90a): wgmma; this GPU is 10.0"
    assert hopper.unmet((9, 0)) is None and hopper.claims() == ["sm_90a"]
    assert Needs().claims() == list(ARCHITECTURES)
    for bad, message in [("// needs: sm_70\n", "older than"), ("// needs: sm_80\n// needs: sm_90\n", "2 'needs:'"),
                         ("// needs: sm_8x\n", "write it as"), ("// needs: Ampere\n", "write it as")]:
        with pytest.raises(BadNeeds, match=message):
            declared(bad)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """The fixture run as an A100 (8.0) and as an RTX 3090 (8.6) would, on the pretend 9.0."""
    project = copy_project(tmp_path_factory.mktemp("arch"), [FIXTURE])
    proc = run_cli("--arch", "8.0", "8.6", root=project, env=fake_env())
    return project, proc


def test_the_architecture_mode_runs_what_each_architecture_can_and_says_why_not_the_rest(emulated):
    project, proc = emulated
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the wrong kernel fails, by name, everywhere
    runs = {r.capability: r for r in architectures.read_all(project / "results")}
    assert sorted(runs) == ["8.0", "8.6"]
    for cc, run in runs.items():
        kernels = run.experiments["portable"].kernels
        assert run.gpu == "NVIDIA Fake GPU" and run.experiments["portable"].date
        assert kernels["1_add"] == architectures.Outcome("verified", 2)  # both edge cases, and nothing timed
        assert kernels["2_cluster"].status == "unavailable"
        assert kernels["2_cluster"].why == f"needs compute capability 9.0 or newer: thread-block clusters; this GPU is {cc}"
        assert kernels["4_hopper"].why == f"needs compute capability 9.0 exactly (sm_90a): wgmma; this GPU is {cc}"
        assert kernels["5_drops_last"].status == "failed" and "wrong answer" in kernels["5_drops_last"].why
        assert run.failed() == [f"portable: 5_drops_last: {kernels['5_drops_last'].why}"]
    # 100 KiB a block: an A100 gives 163, an RTX 3090 99.
    assert runs["8.0"].experiments["portable"].kernels["3_big_shared"].status == "verified"
    assert runs["8.6"].experiments["portable"].kernels["3_big_shared"] == architectures.Outcome(
        "unavailable", 0, "needs 102400 bytes of shared memory a block; this GPU gives a block at most 101376")
    assert "as compute capability 8.6 (sm_86)" in proc.stdout and "wrote results/architectures/sm_86.json" in proc.stdout


def test_an_architecture_run_is_never_a_gpus_results(emulated):
    project, _ = emulated
    store = Store(project / "results")
    assert store.experiments() == [] and store.gpus("portable") == []
    data = json.loads((project / "results" / "architectures" / "sm_80.json").read_text())
    assert data["format"] == architectures.FORMAT and data["capability"] == "8.0"


def test_a_later_run_of_some_experiments_keeps_the_others(emulated, tmp_path):
    project, _ = emulated
    path = project / "results" / "architectures" / "sm_86.json"
    data = json.loads(path.read_text())
    data["experiments"]["elsewhere"] = {"date": "2026-11-26T00:00:00+00:00", "commit": "abc",
                                        "kernels": {"1_k": {"status": "verified", "cases": 3, "why": ""}}}
    path.write_text(json.dumps(data))
    proc = run_cli("--arch", "8.6", "--only", "portable", root=project, env=fake_env())
    assert proc.returncode == 1
    run = architectures.read_all(project / "results")[-1]
    assert sorted(run.experiments) == ["elsewhere", "portable"]
    assert run.experiments["elsewhere"].date.startswith("2026-11-26")  # kept as it ran, with its own date


def test_a_run_of_some_experiments_on_another_gpu_model_is_refused_before_it_loses_the_others(emulated):
    project, _ = emulated
    path = project / "results" / "architectures" / "sm_80.json"
    data = json.loads(path.read_text())
    data["gpu"] = "NVIDIA Other GPU"  # the file's records name one GPU: a run here replaces it whole
    data["experiments"]["elsewhere"] = {"date": "2026-11-26T00:00:00+00:00", "commit": "abc",
                                        "kernels": {"1_k": {"status": "verified", "cases": 3, "why": ""}}}
    path.write_text(json.dumps(data))
    before = path.read_text()
    proc = run_cli("--arch", "8.6", "8.0", "--only", "portable", root=project, env=fake_env())
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "sm_80.json was run on an NVIDIA Other GPU" in proc.stderr and "leaves out elsewhere" in proc.stderr
    assert path.read_text() == before  # refused before anything ran: 8.6 was not rewritten either
    assert "as compute capability" not in proc.stdout


@pytest.mark.parametrize("given, message", [(["9.5"], "this GPU is 9.0"), (["eight"], "compute capabilities such as")])
def test_an_architecture_the_gpu_cannot_run_is_refused(tmp_path, given, message):
    project = copy_project(tmp_path, [FIXTURE])
    proc = run_cli("--arch", *given, root=project, env=fake_env())
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (project / "results" / "architectures").exists()


def test_the_gpu_page_s_table_counts_each_architecture_s_kernels_and_names_why_not(tmp_path):
    """The architectures' table and the sentence it backs (``site/portability.py``), from the files."""
    from types import SimpleNamespace

    from labnotebook.site import portability
    from labnotebook.site.views import Problem

    def run(cc, why):
        return architectures.ArchitectureRun(cc, "NVIDIA Fake GPU", {"portable": architectures.EntryRun(
            "2026-11-27T00:00:00+00:00", "abc", {
                "1_add": architectures.Outcome("verified", 2),
                "3_big_shared": architectures.Outcome("unavailable", 0, why) if why else architectures.Outcome("verified", 2),
                "5_drops_last": architectures.Outcome("failed", 0, "one: wrong answer")})})
    for r in (run("8.6", "needs 102400 bytes of shared memory a block; this GPU gives a block at most 101376"),
              run("8.0", "")):
        architectures.write(tmp_path / "results", r)
    # The entry declares one kernel more than the runs saw: added after them.
    declared = SimpleNamespace(kernels=[SimpleNamespace(name=n) for n in ("1_add", "3_big_shared", "5_drops_last", "6_new")])
    ctx = SimpleNamespace(published=["portable"], results=SimpleNamespace(root=tmp_path, declaration=lambda e: declared),
                          to=lambda p: p)
    runs = portability.runs_of(ctx)
    assert [r.capability for r in runs] == ["8.0", "8.6"]
    assert "**8.6** (Ampere: RTX 30, A10): run on an NVIDIA Fake GPU on 2026-11-27 at commit `abc`; 1 verified, " \
           "1 unavailable, 1 failed." in portability.summary(runs)
    table = portability.matrix(ctx, runs)
    assert "| 2\u00a0verified · <abbr title=\"5&#95;drops&#95;last: one: wrong answer\">1\u00a0failed</abbr> · " in table
    assert "`portable/3_big_shared` as 8.6: needs 102400 bytes" in table
    assert table.count("1\u00a0not\u00a0run\u00a0yet") == 2  # in both architectures' cells
    assert "`portable/6_new` as 8.0: added after this run" in table
    assert portability.shared_memory_walls.__wrapped__(ctx) == "`portable/3_big_shared` (every case it takes) as 8.6"
    architectures.write(tmp_path / "results", run("8.6", "needs compute capability 9.0 or newer"))
    with pytest.raises(Problem, match="for want of shared memory"):  # the page's sentence would no longer hold
        portability.shared_memory_walls.__wrapped__(ctx)
