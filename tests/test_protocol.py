"""The measurement protocol's order pinned by what it does, apart from the key that stales
results when its files change: outputs poisoned before each first run, and only what verified
timed, after it verified."""

import numpy as np

from labnotebook import Case, Experiment, Kernel, Launch, Tolerance, cdiv
from labnotebook.results.format import Check, Timing
from labnotebook.run import protocol

SMALL = Case("small", n=1000)


def launch(case):
    return Launch(grid=(cdiv(case.n, 256),), block=(256,), args=("a", "b", "c", np.int32(case.n)))


def ladder_runner(root, only):
    """A runner on the pretend GPU, for ``only`` of a ladder of three rungs over the same buffers:
    right, one element short (the fake's ``add_skip_last``), and writing nothing (its ``noop``)."""
    from labnotebook.run.runner import Runner

    folder = root / "snippets" / "ladder"
    folder.mkdir(parents=True, exist_ok=True)
    kernels = {"1_add": "add", "2_skips_last": "add_skip_last", "3_writes_nothing": "noop"}
    for stem, function in kernels.items():
        # The pretend nvcc reads only the name; the pretend GPU runs tests/fakegpu/kernels.py's.
        (folder / f"{stem}.cu").write_text(f'extern "C" __global__ void {function}(const float* a, const float* b, '
                                           'float* c, int n) {}\n')
    exp = Experiment(title="Ladder", kernels=[Kernel(f"{stem}.cu", f, launch) for stem, f in kernels.items()],
                     cases=[SMALL], inputs=lambda case, rng: {k: rng.standard_normal(case.n, dtype=np.float32)
                                                              for k in "ab"},
                     reference=lambda a, b: {"c": a.astype(np.float64) + b}, outputs={"c": np.float32},
                     tolerance=Tolerance(atol=0.0, rtol=2.0**-24), name="ladder")
    runner = Runner(exp, folder, root, log=lambda line: None, only=only)
    runner.compile(root / "build")
    return runner


def test_outputs_are_poisoned_before_every_first_run(fake_gpu, tmp_path):
    """Device memory comes back uncleared, so an element a kernel never writes may hold the right
    answer already: an earlier run's, in a buffer reused, or the rung before's, in the case's
    own buffers. Only the poison makes it fail."""
    assert [r.status for r in ladder_runner(tmp_path, {"1_add"}).run_case(SMALL, timed=True)] == ["ok"]
    # The same case again: its buffers reused, c as 1_add left it.
    [nothing] = ladder_runner(tmp_path, {"3_writes_nothing"}).run_case(SMALL, timed=True)
    assert nothing.status == "failed" and "c: 1000 of 1000 elements wrong" in nothing.error
    right, short = ladder_runner(tmp_path, {"1_add", "2_skips_last"}).run_case(SMALL, timed=True)
    assert right.status == "ok" and right.time
    assert short.status == "failed" and "c: 1 of 1000 elements wrong; worst at index [999]" in short.error


CHECK = Check(max_abs_err=0.0, max_rel_err=0.0, mismatches=0, elements=1, bound_ratio=0.0, atol=0.0, rtol=0.0)
TIMING = Timing(median_ms=1.0, q10_ms=1.0, q90_ms=1.0, min_ms=1.0, max_ms=1.0, reps=10)


def test_only_what_verified_is_timed_and_only_once_it_has():
    for verdict, error, steps_then in (("ok", None, ["time"]), ("failed", "wrong answer: c", [])):
        steps = []

        def verify(outputs):
            steps.append("verify")
            return CHECK, verdict, error
        measured = protocol.measure(lambda: steps.append("poison"), lambda: steps.append("run"),
                                    lambda returned: steps.append("fetch") or {},
                                    verify, lambda: steps.append("time") or TIMING, time_it=True)
        assert steps == ["poison", "run", "fetch", "verify", *steps_then]
        assert (measured.status, measured.error, measured.time) == (verdict, error, TIMING if steps_then else None)
