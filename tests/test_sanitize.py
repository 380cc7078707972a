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
