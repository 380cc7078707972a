"""Reading compute-sanitizer's output into per-kernel verdicts."""

from labnotebook.results.format import Verdict
from labnotebook.build.sanitizer import parse

FUNCTIONS = {"write_oob": "1_oob", "vec_add": "1_add"}

MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at write_oob+0x90 in 1_oob.cu:6
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f0000000000 is out of bounds
=========
========= Invalid __global__ write of size 4 bytes
=========     at write_oob+0x90 in 1_oob.cu:6
=========     by thread (1,0,0) in block (0,0,0)
========= ERROR SUMMARY: 2 errors
"""


def test_errors_are_attributed_to_their_kernel():
    found = parse(MEMCHECK, FUNCTIONS)
    assert found["1_oob"] == Verdict(2, "Invalid __global__ write of size 4 bytes")
    assert found["1_add"] == Verdict(0, None)


def test_clean_run():
    found = parse("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", FUNCTIONS)
    assert all(v.errors == 0 for v in found.values())


def test_unattributed_errors_count_against_every_kernel():
    found = parse("========= Program hit cudaErrorLaunchFailure\n========= ERROR SUMMARY: 1 error\n", FUNCTIONS)
    assert all(v.errors == 1 and "cudaErrorLaunchFailure" in v.first for v in found.values())


def test_a_run_that_never_finished_is_not_clean():
    found = parse("========= timed out after 60 s", FUNCTIONS)
    assert all(v.errors is None and "did not finish" in v.first for v in found.values())


def test_racecheck_summary():
    clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert all(v.errors == 0 for v in parse(clean, FUNCTIONS).values())
    racy = ("========= Error: Race reported between Write access at vec_add+0x40 in a.cu:3\n"
            "=========     and Read access at vec_add+0x60 in a.cu:4\n"
            "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    assert parse(racy, FUNCTIONS)["1_add"].errors >= 1


def test_errors_past_the_print_limit_leave_the_other_kernels_unknown_not_clean():
    found = parse(MEMCHECK.replace("ERROR SUMMARY: 2 errors", "ERROR SUMMARY: 25 errors"), FUNCTIONS)
    assert found["1_oob"].errors == 2
    assert found["1_add"].errors is None and "25" not in found["1_add"].first and "23 errors" in found["1_add"].first


def test_racecheck_applies_only_where_there_is_shared_memory():
    from labnotebook.results.format import KernelInfo, LaunchShape, Resources
    from labnotebook.build.sanitizer import TOOLS, applies

    def info(smem):
        return KernelInfo("1.cu", "f", "cuda", "sm_90", Resources(registers=16, smem_bytes=smem))
    plain, dynamic = LaunchShape((1,), (32,)), LaunchShape((1,), (32,), shared_bytes=4096)
    assert not applies("racecheck", info(0), [plain, plain])
    assert applies("racecheck", info(1024), [plain])  # static
    assert applies("racecheck", info(0), [plain, dynamic])  # dynamic, at one case
    assert applies("racecheck", KernelInfo("1.cu", "f", "cuda"), [])  # ptxas said nothing: check
    assert all(applies(t, info(0), [plain]) for t in TOOLS if t != "racecheck")


def test_a_pass_starts_with_the_jobs_that_took_longest_last_time():
    """One job per tool, racecheck one per kernel with shared memory, each estimated at its own
    seconds in the previous record, else at a quarter of the timed run."""
    from types import SimpleNamespace

    from labnotebook.build.sanitizing import Sanitizing
    from labnotebook.results.format import KernelInfo, Record, Resources

    def info(f, smem):
        return KernelInfo(f"{f}.cu", f, "cuda", "sm_90", Resources(registers=16, smem_bytes=smem))
    kernels = {"1_a": info("a", 0), "2_b": info("b", 1024), "3_c": info("c", 1024)}
    record = Record(experiment="x", title="x", gpu="G", provenance=None, rows=[], status="ok", kernels=kernels)
    previous = Record(experiment="x", title="x", gpu="G", provenance=None, rows=[], status="ok",
                      sanitizer_s={"memcheck": 3.0, "racecheck 3_c": 30.0, "racecheck 2_b": 2.0})
    jobs = Sanitizing(SimpleNamespace(), True).jobs("x", None, record, 40.0, then=lambda: [], previous=previous)
    assert {j.label: j.estimate_s for j in jobs} == {
        "x: memcheck": 3.0, "x: racecheck 2_b": 2.0, "x: racecheck 3_c": 30.0, "x: synccheck": 10.0, "x: initcheck": 10.0}
